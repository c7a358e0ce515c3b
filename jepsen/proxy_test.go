package jepsen

import (
	"bufio"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends one line and reports whether it came back within wait.
func roundTrip(c net.Conn, wait time.Duration) bool {
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

func TestProxyFaults(t *testing.T) {
	target := echoServer(t)
	pids := map[string]int{"self": os.Getpid()}
	var mu sync.Mutex
	var seen []string
	identify := func(remote, local net.Addr) string {
		s := SocketOwner(remote, local, pids)
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
		return s
	}
	p, err := NewProxy("test", "127.0.0.1:0", target, identify, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	live := dial()
	if !roundTrip(live, 2*time.Second) {
		t.Fatal("healthy link did not forward")
	}
	mu.Lock()
	first := append([]string(nil), seen...)
	mu.Unlock()
	if len(first) == 0 || first[0] != "self" {
		t.Fatalf("connection source identified as %q, want self", first)
	}

	// Cutting the source closes live connections and black-holes new ones.
	p.SetFaults("self", LinkFaults{Cut: true})
	if roundTrip(live, 300*time.Millisecond) {
		t.Fatal("live connection survived a cut")
	}
	held := dial()
	if roundTrip(held, 300*time.Millisecond) {
		t.Fatal("new connection forwarded across a cut")
	}
	// Other sources are unaffected.
	p.SetFaults("other", LinkFaults{Cut: true})
	p.SetFaults("self", LinkFaults{})
	if roundTrip(dial(), 2*time.Second) != true {
		t.Fatal("healed link did not forward")
	}

	// Loss 1: every chunk resets the connection.
	p.SetFaults("self", LinkFaults{Loss: 1})
	if roundTrip(dial(), 500*time.Millisecond) {
		t.Fatal("lossy link with loss=1 forwarded")
	}

	// Delay: a round trip crosses the proxy twice, so it takes at least
	// twice the delay (a lower bound, which holds on any machine).
	p.SetFaults("self", LinkFaults{Delay: 100 * time.Millisecond})
	c := dial()
	t0 := time.Now()
	if !roundTrip(c, 5*time.Second) {
		t.Fatal("slow link did not forward")
	}
	if el := time.Since(t0); el < 200*time.Millisecond {
		t.Fatalf("round trip over a 100ms link took %v", el)
	}
	p.Heal()
	if !roundTrip(dial(), 2*time.Second) {
		t.Fatal("after Heal the link did not forward")
	}
	st := p.Stats()
	if len(st) != 1 || st[0].Source != "self" || st[0].Accepted != 6 || st[0].Blackholed != 1 {
		t.Fatalf("stats = %+v, want 6 accepted and 1 black-holed from self", st)
	}
}

func TestParseProcAddr(t *testing.T) {
	tests := []struct {
		in   string
		ip   string
		port int
		ok   bool
	}{
		{"0100007F:1F90", "127.0.0.1", 8080, true},
		{"0200007F:0050", "127.0.0.2", 80, true},
		{"00000000000000000000000001000000:0016", "::1", 22, true},
		{"0100007F", "", 0, false},
		{"XYZ0007F:0050", "", 0, false},
	}
	for _, tt := range tests {
		ip, port, ok := parseProcAddr(tt.in)
		if ok != tt.ok || (ok && (ip.String() != tt.ip || port != tt.port)) {
			t.Errorf("parseProcAddr(%q) = %v %d %v, want %s %d %v", tt.in, ip, port, ok, tt.ip, tt.port, tt.ok)
		}
	}
}
