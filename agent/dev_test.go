package agent

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testwait"
)

// syncBuffer is an io.Writer safe for the agent goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runDevAgent runs an in-process dev agent with args until it has seeded
// its sample data. stop shuts it down and returns Run's error; cleanup
// calls it too.
func runDevAgent(t *testing.T, args ...string) (a *Agent, out *syncBuffer, stop func() error) {
	t.Helper()
	cfg, opts, err := ParseArgs(append([]string{"-dev", "-http-addr", "127.0.0.1:0", "-log-level", "error"}, args...),
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	a = mustAgent(t, cfg, opts)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, out) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	testwait.Until(t, 30*time.Second, "the dev agent's greeting", func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("agent stopped early: %v", err)
		default:
		}
		return strings.Contains(out.String(), "ready")
	})
	return a, out, stop
}

// startAgent is runDevAgent for tests that let cleanup stop the agent.
func startAgent(t *testing.T, args ...string) (*Agent, *syncBuffer) {
	a, out, _ := runDevAgent(t, args...)
	return a, out
}

// TestDevAgent runs `agent -dev` in-process: it must become ready, seed the
// sample data through the log, serve /healthz, /readyz and /metrics, and
// remove its temporary data dir on exit.
func TestDevAgent(t *testing.T) {
	s, out, stop := runDevAgent(t)
	for _, want := range []string{`Sample reservation "sample"`, "cpu=64,gpu=2", "STATE_COMMITTED", "ledgerd resources -addr"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}
	base := "http://" + s.Addr()
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "ready",
		"/metrics": "ledgerd_raft_is_leader 1",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	dir := s.tempDir
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dev data dir %s survived exit (%v)", dir, err)
	}
}

// The profiling endpoints exist only when the pprof key is set.
func TestAgentPprofKey(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{{nil, http.StatusNotFound}, {[]string{"-pprof=true"}, http.StatusOK}} {
		s, _ := startAgent(t, tc.args...)
		resp, err := http.Get("http://" + s.Addr() + "/debug/pprof/heap?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == http.StatusOK && !strings.Contains(string(body), "heap profile") {
			t.Errorf("args %q: GET /debug/pprof/heap = %d, want %d", tc.args, resp.StatusCode, tc.want)
		}
	}
}
