package testnet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestPortsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	seen := map[int]bool{}
	for round := range 3 {
		ports, err := Ports(10)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("round %d: port %d handed out twice", round, p)
			}
			seen[p] = true
			if p < lo || p >= hi {
				t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
			}
			if !bindable(p) {
				t.Fatalf("port %d handed out but not bindable for TCP and UDP", p)
			}
		}
	}
}

// TestReservationHoldsAcrossProcesses: a port this process was handed out
// is locked against every other process (a child of this test binary).
func TestReservationHoldsAcrossProcesses(t *testing.T) {
	if p := os.Getenv("TESTNET_TRY_LOCK"); p != "" {
		port, _ := strconv.Atoi(p)
		lock, err := lockPort(port)
		switch {
		case err != nil:
			fmt.Println("error", err)
		case lock == nil:
			fmt.Println("busy")
		default:
			fmt.Println("locked")
		}
		return
	}
	ports, err := Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	try := func(p int) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReservationHoldsAcrossProcesses$")
		cmd.Env = append(os.Environ(), "TESTNET_TRY_LOCK="+strconv.Itoa(p))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return strings.Fields(string(out))[0]
	}
	for _, p := range ports {
		if got := try(p); got != "busy" {
			t.Fatalf("another process could take reserved port %d: %s", p, got)
		}
	}
	// A port this process did not reserve is lockable by the child (which
	// then exits, releasing it): the lock is what tells the cases apart.
	// Skip the few another test process may hold right now.
	lo, hi := portRange()
	for p, tries := lo, 0; p < hi; p++ {
		if held[p] != nil {
			continue
		}
		got := try(p)
		if got == "locked" {
			return
		}
		if tries++; got != "busy" || tries == 5 {
			t.Fatalf("child could not lock unreserved port %d: %s", p, got)
		}
	}
}

func TestInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, inUse := net.Listen("tcp", ln.Addr().String())
	_, refused := net.Dial("tcp", Addr(mustPorts(t, 1)[0]))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"real bind error", inUse, true},
		{"wrapped", fmt.Errorf("raft: %w", inUse), true},
		{"flattened into text", errors.New("Failed to start TCP listener on \"127.0.0.1\" port 12345: listen tcp 127.0.0.1:12345: bind: address already in use"), true},
		{"errno", syscall.EADDRINUSE, true},
		{"connection refused", refused, false},
		{"other", errors.New("data dir: permission denied"), false},
		{"nil", nil, false},
	} {
		if got := InUse(tc.err); got != tc.want {
			t.Errorf("%s: InUse(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func mustPorts(t *testing.T, n int) []int {
	t.Helper()
	p, err := Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRetry(t *testing.T) {
	other := errors.New("bad config")
	for _, tc := range []struct {
		name      string
		errs      []error // returned by successive attempts; nil after the end
		calls     int
		wantErr   error
		wantInUse bool
	}{
		{"first try", nil, 1, nil, false},
		{"in use twice", []error{syscall.EADDRINUSE, syscall.EADDRINUSE}, 3, nil, false},
		{"other error stops at once", []error{other}, 1, other, false},
		{"in use then other error", []error{syscall.EADDRINUSE, other}, 2, other, false},
		{"always in use", slices.Repeat([]error{syscall.EADDRINUSE}, Attempts+1), Attempts, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, logged := 0, 0
			err := retry(func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			}, func(error) { logged++ })
			if calls != tc.calls {
				t.Errorf("%d attempts, want %d", calls, tc.calls)
			}
			if want := min(calls-1, Attempts-1); !tc.wantInUse && tc.wantErr == nil && logged != want {
				t.Errorf("%d retries logged, want %d", logged, want)
			}
			switch {
			case tc.wantInUse:
				if !InUse(err) {
					t.Errorf("err %v, want an in-use error", err)
				}
			case !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil):
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestStartMovesToFreshAddresses: when a start fails because an address was
// taken, the next attempt gets entirely different addresses.
func TestStartMovesToFreshAddresses(t *testing.T) {
	var tried [][]string
	Start(t, 3, func(addrs []string) error {
		tried = append(tried, addrs)
		if len(tried) > 1 {
			return nil
		}
		// Someone else took the first address between probe and bind.
		squatter, err := net.Listen("tcp", addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		defer squatter.Close()
		_, err = net.Listen("tcp", addrs[0])
		return err
	})
	if len(tried) != 2 {
		t.Fatalf("%d attempts, want 2", len(tried))
	}
	for _, a := range tried[1] {
		if slices.Contains(tried[0], a) {
			t.Fatalf("second attempt reused %s from the first %v", a, tried[0])
		}
	}
}
