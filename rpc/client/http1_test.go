package client

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPVersionOverTLS checks what each setting of Options.HTTP1 speaks
// to a server that offers both HTTP/1.1 and HTTP/2 over TLS.
func TestHTTPVersionOverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	for _, tc := range []struct {
		http1 bool
		want  string
	}{{false, "HTTP/2.0"}, {true, "HTTP/1.1"}} {
		hc := httpClient(cfg, tc.http1)
		for range 3 { // kept-alive connections answer the same way
			resp, err := hc.Get(srv.URL)
			if err != nil {
				t.Fatalf("http1=%v: %v", tc.http1, err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("X-Proto"); got != tc.want {
				t.Fatalf("http1=%v: server saw %s, want %s", tc.http1, got, tc.want)
			}
		}
		hc.CloseIdleConnections()
	}
}

// TestHTTP1WithoutTLS: HTTP1 replaces h2c with plain HTTP/1.1.
func TestHTTP1WithoutTLS(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
	}))
	t.Cleanup(srv.Close)
	resp, err := httpClient(nil, true).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Proto"); got != "HTTP/1.1" {
		t.Fatalf("server saw %s, want HTTP/1.1", got)
	}
}

// TestHTTP1RefusesGRPC: gRPC needs HTTP/2, so the combination is an error
// that names the option instead of calls that fail later.
func TestHTTP1RefusesGRPC(t *testing.T) {
	_, err := New([]string{"127.0.0.1:1"}, Options{HTTP1: true, Protocol: ProtocolGRPC})
	if err == nil || !strings.Contains(err.Error(), "HTTP1") {
		t.Fatalf("New(HTTP1, gRPC) = %v, want an error naming Options.HTTP1", err)
	}
	if _, err := New([]string{"127.0.0.1:1"}, Options{HTTP1: true, Protocol: ProtocolGRPCWeb}); err != nil {
		t.Fatalf("New(HTTP1, gRPC-Web): %v", err)
	}
}
