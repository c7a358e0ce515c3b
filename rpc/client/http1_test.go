package client

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPVersionOverTLS checks what each transport httpClient builds speaks
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

// TestHTTPVersionOptions: what each Options.HTTP speaks for Batch calls
// and for every other call, with each client mode and protocol, and the
// combinations refused with an error naming the option instead of calls
// that fail later.
func TestHTTPVersionOptions(t *testing.T) {
	for _, tc := range []struct {
		opts         Options
		batch, other HTTPVersion
		wantErr      string
	}{
		{opts: Options{}, batch: HTTP1, other: HTTP2},
		{opts: Options{Protocol: ProtocolGRPCWeb}, batch: HTTP1, other: HTTP2},
		{opts: Options{NoCoalesce: true}, batch: HTTP1, other: HTTP2},
		{opts: Options{Protocol: ProtocolGRPC}, batch: HTTP2, other: HTTP2},
		{opts: Options{HTTP: HTTP2}, batch: HTTP2, other: HTTP2},
		{opts: Options{HTTP: HTTP1, NoCoalesce: true}, batch: HTTP1, other: HTTP1},
		{opts: Options{HTTP: HTTP1, Protocol: ProtocolGRPC}, wantErr: "Options.HTTP"},
		{opts: Options{HTTP: 7}, wantErr: "Options.HTTP"},
	} {
		c, err := New([]string{"127.0.0.1:1"}, tc.opts)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New(%+v) = %v, want an error naming %s", tc.opts, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%+v): %v", tc.opts, err)
			continue
		}
		batch, other := tc.opts.HTTP.versions(tc.opts)
		if batch != tc.batch || other != tc.other {
			t.Errorf("Options%+v speaks %s for batches and %s otherwise, want %s and %s", tc.opts, batch, other, tc.batch, tc.other)
		}
		// The transports the client built: one shared unless the two
		// versions differ on a coalescing client.
		shared := c.hc == c.batchHC
		if want := batch == other || tc.opts.NoCoalesce; shared != want {
			t.Errorf("Options%+v: batch and other calls share a transport = %v, want %v", tc.opts, shared, want)
		}
	}
}

// TestParseHTTPVersion: the flag spellings round-trip and a bad one names
// what it wants.
func TestParseHTTPVersion(t *testing.T) {
	for _, v := range []HTTPVersion{HTTPAuto, HTTP1, HTTP2} {
		got, err := ParseHTTPVersion(v.String())
		if err != nil || got != v {
			t.Errorf("ParseHTTPVersion(%q) = %v, %v", v.String(), got, err)
		}
	}
	if _, err := ParseHTTPVersion("3"); err == nil || !strings.Contains(err.Error(), "auto, 1.1 or 2") {
		t.Errorf("ParseHTTPVersion(3) = %v", err)
	}
}
