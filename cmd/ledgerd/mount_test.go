package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMountAPIFailsClosed checks that an API that cannot be built (here:
// no node) answers 503 on every service path instead of serving without
// its configured authentication.
func TestMountAPIFailsClosed(t *testing.T) {
	mux := http.NewServeMux()
	mountAPI(mux, apiDeps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TokensFile: "/nonexistent/tokens.json"})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{"/ledgerd.v1.ReservationService/Reserve", "/ledgerd.v1.ResourceService/List", "/ledgerd.v1.ClusterService/Members"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", path, resp.StatusCode)
		}
	}
	if _, err := apiServer(apiDeps{}); err == nil {
		t.Error("apiServer without a node succeeded")
	}
}
