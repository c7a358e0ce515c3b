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
	// wrote is closed and replaced after every Write.
	wrote chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
	}
	s.wrote = make(chan struct{})
	return s.b.Write(p)
}

// changed returns a channel closed at the next Write.
func (s *syncBuffer) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{})
	}
	return s.wrote
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
	// The agent says it is ready on its output: wait for the write.
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		wrote := out.changed()
		if strings.Contains(out.String(), "is ready") {
			break
		}
		select {
		case <-wrote:
		case err := <-done:
			done <- err
			t.Fatalf("agent stopped early: %v", err)
		case <-deadline.C:
			t.Fatal("dev agent not ready within 30s")
		}
	}
	return a, out, stop
}

// startAgent is runDevAgent for tests that let cleanup stop the agent.
func startAgent(t *testing.T, args ...string) (*agent.Agent, *syncBuffer) {
	a, out, _ := runDevAgent(t, args...)
	return a, out
}
