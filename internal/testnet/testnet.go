// Package testnet hands out loopback addresses for servers under test that
// bind their own sockets (Raft transports, memberlist, agent processes), and
// restarts such servers on fresh addresses when one was taken anyway.
//
// Probing a port by binding 127.0.0.1:0 and closing it races: until the
// server binds the port again, anything else may take it, and the kernel
// itself reuses freed ephemeral ports as source ports of outgoing
// connections. So ports come from below the kernel's ephemeral range (which
// neither bind(":0") nor connect ever picks), each is checked free for TCP
// and UDP (memberlist uses both), and each is reserved for the life of the
// process with a lock file that other test processes of this module
// respect, so parallel package tests never get the same port. Nothing
// stops an unrelated program from binding a port explicitly, which is why
// harnesses start through Start or check InUse and retry.
//
// Where the code under test accepts a net.Listener, tests should bind
// 127.0.0.1:0 themselves and hand the listener over instead.
//
// It is test and chaos-harness support only: product code must not import
// it. It needs flock(2), so it builds on Unix only, like the harnesses.
package testnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Attempts is how many times Start tries before it gives up.
const Attempts = 5

// Lowest port handed out: below it live well-known and registered services.
const lowPort = 10000

var (
	mu sync.Mutex
	// held maps every port this process reserved to its open lock file;
	// the files stay open (and locked) until the process exits.
	held = map[int]*os.File{}
)

// Addrs returns n distinct "127.0.0.1:port" addresses, free for TCP and
// UDP right now and reserved for this process (see the package comment).
func Addrs(t testing.TB, n int) []string {
	t.Helper()
	out, err := addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func addrs(n int) ([]string, error) {
	ports, err := Ports(n)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i, p := range ports {
		out[i] = Addr(p)
	}
	return out, nil
}

// Addr formats a loopback address with port p.
func Addr(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }

// Ports returns n distinct reserved ports on 127.0.0.1 (see Addrs).
func Ports(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	lo, hi := portRange()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("testnet: no free port in [%d, %d) after %d tries", lo, hi, tries)
		}
		p := lo + rand.IntN(hi-lo)
		if held[p] != nil {
			continue
		}
		lock, err := lockPort(p)
		if err != nil {
			return nil, err
		}
		if lock == nil {
			continue // another test process holds it
		}
		if !bindable(p) {
			lock.Close()
			continue
		}
		held[p] = lock
		out = append(out, p)
	}
	return out, nil
}

// InUse reports whether err says a listen address was already in use.
// memberlist and agent logs flatten the bind error into text, so the
// message counts as much as the errno.
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}

// Start calls start with n fresh addresses from Addrs, and again with other
// fresh ones each time it fails with an InUse error, up to Attempts times.
// Any other error, or an in-use error on the last attempt, fails t. start
// must release whatever it set up before returning an error.
func Start(t testing.TB, n int, start func(addrs []string) error) {
	t.Helper()
	if err := retry(func() error {
		as, err := addrs(n)
		if err != nil {
			return err
		}
		return start(as)
	}, func(err error) { t.Logf("%v: starting again on fresh ports", err) }); err != nil {
		t.Fatal(err)
	}
}

// retry runs attempt until it succeeds, fails with an error other than
// InUse, or has failed Attempts times; it reports each retried failure to
// logf.
func retry(attempt func() error, logf func(error)) error {
	var err error
	for i := range Attempts {
		if err = attempt(); !InUse(err) {
			return err
		}
		if i < Attempts-1 {
			logf(err)
		}
	}
	return fmt.Errorf("start on fresh ports: still in use after %d attempts: %w", Attempts, err)
}

// portRange is [lowPort, start of the ephemeral range), or a fixed range
// below the IANA ephemeral ports where /proc does not tell.
func portRange() (lo, hi int) {
	hi = 49152
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				hi = v
			}
		}
	}
	if hi-lowPort < 1000 {
		// An ephemeral range that starts this low leaves nothing safe
		// below it; take the space above instead.
		return 61000, 65535
	}
	return lowPort, hi
}

// lockPort takes the cross-process lock of port p. It returns nil, nil when
// another process holds it.
func lockPort(p int) (*os.File, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ledgerd-test-ports-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("testnet: port lock dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testnet: port lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("testnet: lock port %d: %w", p, err)
	}
	return f, nil
}

// bindable reports whether 127.0.0.1:p can be bound for TCP and UDP now.
func bindable(p int) bool {
	ln, err := net.Listen("tcp", Addr(p))
	if err != nil {
		return false
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", Addr(p))
	if err != nil {
		return false
	}
	pc.Close()
	return true
}
