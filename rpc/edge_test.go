package rpc_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// post sends a Connect unary JSON request and returns the status and body.
func post(t *testing.T, url, token string, body io.Reader, hdr map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/ledgerd.v1.ResourceService/List", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEdgeAuthenticatesBeforeTheBody: an anonymous caller is refused
// from its headers while its body has not even started to arrive (the
// body here never does), so a stalled or huge body costs nothing.
func TestEdgeAuthenticatesBeforeTheBody(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	// A raw HTTP/1.1 request announcing a 100 MB body and sending none.
	conn, err := net.DialTimeout("tcp", s.Addrs[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := "POST /ledgerd.v1.ResourceService/List HTTP/1.1\r\nHost: ledgerd\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while the body is outstanding: %v", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "unauthenticated") {
		t.Fatalf("anonymous caller with an outstanding body: %s %s", resp.Status, body)
	}
	if code, body := post(t, s.URLs[0], agenttest.TokenAcme, strings.NewReader("{}"), nil); code != http.StatusOK {
		t.Fatalf("authenticated caller: %d %s", code, body)
	}
}

// TestEdgeLimitsFailedAuthentications: guesses from one address are
// refused as unauthenticated up to the burst, then rate limited; a caller
// with a good token is not affected.
func TestEdgeLimitsFailedAuthentications(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	limited := 0
	for range 60 {
		code, body := post(t, s.URLs[0], "guess", strings.NewReader("{}"), nil)
		switch {
		case code == http.StatusTooManyRequests && strings.Contains(body, "RATE_LIMITED"):
			limited++
		case code != http.StatusUnauthorized:
			t.Fatalf("bad token: %d %s", code, body)
		}
	}
	// The burst is 20 and the refill 10/s: however slow this machine, most
	// of 60 quick guesses are refused by the limiter.
	if limited < 20 {
		t.Fatalf("only %d of 60 guesses were rate limited", limited)
	}
	if code, body := post(t, s.URLs[0], agenttest.TokenAcme, strings.NewReader("{}"), nil); code != http.StatusOK {
		t.Fatalf("good token after the guesses: %d %s", code, body)
	}
}

// TestEdgeRefusesGzipBomb: a compressed request that inflates past the
// size limit is refused as ResourceExhausted (the inflation stops at the
// limit: see TestCappedGzipStopsAtTheLimit and BenchmarkGzipBomb), over
// Connect's JSON and through the Go client's gRPC alike.
func TestEdgeRefusesGzipBomb(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write([]byte(`{"stale": true`))
	_, _ = zw.Write(bytes.Repeat([]byte(" "), 64<<20))
	_, _ = zw.Write([]byte(`}`))
	_ = zw.Close()
	code, body := post(t, s.URLs[0], agenttest.TokenAcme, bytes.NewReader(z.Bytes()), map[string]string{"Content-Encoding": "gzip"})
	if code != http.StatusTooManyRequests || !strings.Contains(body, "resource_exhausted") {
		t.Fatalf("gzip bomb: %d %s", code, body)
	}
	// A small gzip request still works.
	var ok bytes.Buffer
	zw = gzip.NewWriter(&ok)
	_, _ = zw.Write([]byte(`{}`))
	_ = zw.Close()
	if code, body := post(t, s.URLs[0], agenttest.TokenAcme, &ok, map[string]string{"Content-Encoding": "gzip"}); code != http.StatusOK {
		t.Fatalf("small gzip request: %d %s", code, body)
	}
	// And over gRPC with gzip from a client.
	c := newAPI(s.URLs[0], agenttest.TokenAcme, connect.WithGRPC(), connect.WithSendGzip())
	if _, err := c.rsc.List(context.Background(), connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{})); err != nil {
		t.Fatalf("gRPC with gzip: %v", err)
	}
}

// TestEdgeRefusesUnknownJSONFields: the server's JSON codec refuses a
// field the schema does not know, naming it, instead of dropping it (a
// typo such as notBefor once booked at "now").
func TestEdgeRefusesUnknownJSONFields(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body := `{"shape":{"parts":[{"resource":"cpu","amount":1}],"duration":"3600s","notBefor":"2030-01-02T00:00:00Z"}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URLs[0]+"/ledgerd.v1.ReservationService/Reserve", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agenttest.TokenAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "notBefor") {
		t.Fatalf("unknown field: %s %s", resp.Status, b)
	}
}
