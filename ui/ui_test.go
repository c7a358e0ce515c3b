package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/ui"
)

func TestHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(ui.Path, ui.Handler())
	mux.Handle("GET /{$}", ui.RedirectRoot())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	index := get(t, noRedirect, srv.URL+"/ui/", http.StatusOK)
	if !strings.Contains(index.body, `<canvas id="canvas"`) {
		t.Fatalf("/ui/ is not the UI's index.html:\n%.300s", index.body)
	}
	for _, inline := range []string{"<script>", "onload=", "onclick=", "style=\""} {
		if strings.Contains(index.body, inline) {
			t.Errorf("index.html contains %q, which the Content-Security-Policy forbids", inline)
		}
	}
	asset := between(index.body, `src="./assets/`, `"`)
	if asset == "" {
		t.Fatal("index.html names no script under assets/")
	}

	tests := []struct {
		name, method, path string
		code               int
		cache, location    string
	}{
		{"index", "GET", "/ui/", 200, "no-cache", ""},
		{"index by name", "GET", "/ui/index.html", 200, "no-cache", ""},
		{"head", "HEAD", "/ui/", 200, "no-cache", ""},
		{"asset", "GET", "/ui/assets/" + asset, 200, "public, max-age=31536000, immutable", ""},
		{"missing", "GET", "/ui/assets/nope.js", 404, "", ""},
		{"directory", "GET", "/ui/assets/", 404, "", ""},
		{"escape", "GET", "/ui/assets/..%2f..%2fui.go", 404, "", ""},
		{"post", "POST", "/ui/", 405, "", ""},
		{"root redirects", "GET", "/", 302, "", "/ui/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
			}
			if tc.location != "" && resp.Header.Get("Location") != tc.location {
				t.Errorf("Location %q, want %q", resp.Header.Get("Location"), tc.location)
			}
			if tc.cache != "" && resp.Header.Get("Cache-Control") != tc.cache {
				t.Errorf("Cache-Control %q, want %q", resp.Header.Get("Cache-Control"), tc.cache)
			}
			if strings.HasPrefix(tc.path, "/ui/") {
				checkSecurityHeaders(t, resp.Header)
			}
		})
	}
}

// checkSecurityHeaders asserts the CSP's load-bearing directives: no inline
// script or style, no eval, API calls to the same origin only, no framing.
func checkSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
		"frame-ancestors 'none'", "base-uri 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:"} {
		if strings.Contains(csp, bad) {
			t.Errorf("Content-Security-Policy %q allows %q", csp, bad)
		}
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", h.Get("X-Content-Type-Options"))
	}
	if h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("X-Frame-Options = %q", h.Get("X-Frame-Options"))
	}
}

type response struct {
	header http.Header
	body   string
}

func get(t *testing.T, c *http.Client, url string, code int) response {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, code)
	}
	return response{resp.Header, string(b)}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	j := strings.Index(s, to)
	if j < 0 {
		return ""
	}
	return s[:j]
}
