package rpc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/agent/agenttest"
)

// TestSmallResponsesAreNotCompressed: gzip on messages of a few hundred
// bytes cost about a tenth of all CPU in the service profile, so the
// server sends them uncompressed even to a client that accepts gzip.
func TestSmallResponsesAreNotCompressed(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	body := `{"shape": {"parts": [{"resource": "cpu", "amount": "16"}], "duration": "3600s", "notBefore": "2030-01-01T01:00:00Z"}, "idempotencyKey": "gz-1"}`
	req, _ := http.NewRequest(http.MethodPost, s.URLs[0]+"/ledgerd.v1.ReservationService/Reserve", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agenttest.TokenAcme)
	// Set explicitly, so the transport neither adds nor strips it.
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("small response sent with Content-Encoding %q, want none", ce)
	}
}
