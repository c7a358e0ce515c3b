package agent

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIFailsClosed checks that an API that cannot be built (here: a
// tokens file that stops parsing between the configuration's check, which
// reads it, and the start) answers 503 on every service path instead of
// serving without its configured authentication, while health and metrics
// stay up.
func TestAPIFailsClosed(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"tokens":[{"token":"abcdefghij","tenant":"a"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, flags, err := ParseArgs([]string{"-dev", "-http-addr", "127.0.0.1:0", "-tokens-file", tokens}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokens, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, cfg, flags)
	a.Start()
	defer a.Close()
	for _, c := range []struct {
		path string
		want int
	}{
		{"/ledgerd.v1.ReservationService/Reserve", http.StatusServiceUnavailable},
		{"/ledgerd.v1.ResourceService/List", http.StatusServiceUnavailable},
		{"/ledgerd.v1.ClusterService/Members", http.StatusServiceUnavailable},
	} {
		resp, err := http.Post(a.URL()+c.path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.path, resp.StatusCode, c.want)
		}
	}
	resp, err := http.Get(a.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: status %d, want 200", resp.StatusCode)
	}
}
