package main

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent"
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

// runDevAgent runs an in-process `agent -dev` with args until it has
// seeded its sample data. stop shuts it down and returns Run's error; it
// also runs at cleanup.
func runDevAgent(t *testing.T, args ...string) (a *agent.Agent, out *syncBuffer, stop func() error) {
	t.Helper()
	cfg, flags, err := agent.ParseArgs(append([]string{"-dev", "-http-addr", "127.0.0.1:0", "-log-level", "error"}, args...),
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a, err = agent.New(cfg, agent.Options{Dev: flags.Dev, Logger: cfg.NewLogger(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, out) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "is ready") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("agent stopped early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("dev agent not ready within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return a, out, stop
}

// startAgent is runDevAgent for tests that let cleanup stop the agent.
func startAgent(t *testing.T, args ...string) (*agent.Agent, *syncBuffer) {
	a, out, _ := runDevAgent(t, args...)
	return a, out
}
