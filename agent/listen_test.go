package agent

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testwait"
)

// dialFrom opens a TCP connection to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	return c
}

// TestCapListener: connections over one address's cap or over the total
// cap are closed on accept; closing one frees its slot, once.
func TestCapListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newCapListener(raw, 3, 2)
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	addr := raw.Addr().String()
	next := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not accepted within 10s", what)
			return nil
		}
	}
	// dropped waits until the listener has refused want connections.
	dropped := func(want uint64) {
		t.Helper()
		testwait.Until(t, 10*time.Second, fmt.Sprintf("%d refused connections", want), func() bool { return l.Dropped() >= want })
	}
	a1 := dialFrom(t, "127.0.0.1", addr)
	defer a1.Close()
	s1 := next("first from .1")
	a2 := dialFrom(t, "127.0.0.1", addr)
	defer a2.Close()
	next("second from .1")
	a3 := dialFrom(t, "127.0.0.1", addr) // over .1's cap of 2
	defer a3.Close()
	dropped(1)
	b1 := dialFrom(t, "127.0.0.2", addr) // another address still gets in
	defer b1.Close()
	next("first from .2")
	b2 := dialFrom(t, "127.0.0.2", addr) // over the total cap of 3
	defer b2.Close()
	dropped(2)
	// A refused connection is closed by the server: the client reads EOF.
	_ = a3.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := a3.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("refused connection still open: %d, %v", n, err)
	}
	s1.Close()
	s1.Close() // a second close must not free a second slot
	a4 := dialFrom(t, "127.0.0.1", addr)
	defer a4.Close()
	next("after a close")
	a5 := dialFrom(t, "127.0.0.3", addr)
	defer a5.Close()
	dropped(3)
}
