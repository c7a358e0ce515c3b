package slurm

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
)

// script is a fake Exec: it records every command line and answers from a
// list of replies, one per call (the last one repeats).
type script struct {
	mu      sync.Mutex
	calls   []string
	replies []reply
}

type reply struct {
	stdout, stderr string
	fail           bool
}

// exitErr is a real *exec.ExitError (exit status 1), as scontrol gives.
var exitErr = func() error {
	err := exec.Command("false").Run()
	if err == nil {
		panic("false succeeded")
	}
	return err
}()

func (s *script) exec(_ context.Context, name string, args []string) ([]byte, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name+" "+strings.Join(args, " "))
	r := s.replies[min(len(s.calls), len(s.replies))-1]
	var err error
	if r.fail {
		err = exitErr
	}
	return []byte(r.stdout), []byte(r.stderr), err
}

func newTestDriver(t *testing.T, s *script, now time.Time, mod func(*Config)) *Driver {
	t.Helper()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Prefix: "lg-", Zone: berlin, Exec: s.exec, Now: func() time.Time { return now }}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func TestClassify(t *testing.T) {
	for msg, want := range map[string]error{
		"Error creating the reservation: Requested reservation overlaps with another reservation": bridge.ErrOverlap,
		"Error creating the reservation: Requested nodes are busy":                                bridge.ErrNodesBusy,
		"Error creating the reservation: Duplicate reservation name":                              bridge.ErrDuplicateName,
		"Error creating the reservation: Invalid time specified":                                  bridge.ErrTimeInPast,
		"Error creating the reservation: Invalid node name specified":                             bridge.ErrInvalidNodes,
		"Error creating the reservation: Invalid user id":                                         bridge.ErrInvalidUser,
		"delete_reservation ReservationName=x: Requested reservation is in use":                   bridge.ErrInUse,
		"slurm_load_reservations error: Unable to contact slurm controller (connect failure)":     bridge.ErrUnavailable,
		"Error creating the reservation: Unexpected message received":                             bridge.ErrUnavailable,
		"Partition nosuch not found":                                                              bridge.ErrUnknownPartition,
		"something new":                                                                           bridge.ErrOther,
	} {
		if got := classify("create", msg); got != want {
			t.Errorf("classify(%q) = %v, want %v", msg, got, want)
		}
	}
	if got := classify("delete", "delete_reservation ReservationName=x: Requested reservation is invalid"); got != bridge.ErrUnknownReservation {
		t.Errorf("unknown name on delete: %v", got)
	}
	if got := classify("create", "Requested reservation is invalid"); got != bridge.ErrOther {
		t.Errorf("invalid reservation on create: %v, want ErrOther", got)
	}
}

func TestCreateWritesNamedNodesAndZonedTimes(t *testing.T) {
	s := &script{replies: []reply{{stdout: "Reservation created: lg-7"}}}
	d := newTestDriver(t, s, now, func(c *Config) { c.IgnoreJobs = true })
	spec := bridge.Spec{Name: "lg-7", Nodes: []string{"n3", "n1"}, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour),
		Users: []string{"bob", "alice"}, Accounts: []string{"physics"}}
	if err := d.Create(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	// 10:00 UTC is 11:00 in Berlin in December.
	want := "scontrol create reservation ReservationName=lg-7 StartTime=2026-12-01T11:00:00 EndTime=2026-12-01T12:00:00 Nodes=n1,n3 Users=alice,bob Accounts=physics Flags=IGNORE_JOBS"
	if len(s.calls) != 1 || s.calls[0] != want {
		t.Fatalf("calls %q\nwant %q", s.calls, want)
	}
	// A start that has passed is written as now.
	spec.Start = now.Add(-time.Minute)
	if err := d.Create(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.calls[1], " StartTime=now ") {
		t.Fatalf("call %q: want StartTime=now", s.calls[1])
	}
}

func TestWritesRefusedWithoutContact(t *testing.T) {
	s := &script{replies: []reply{{}}}
	d := newTestDriver(t, s, now, nil)
	ctx := context.Background()
	good := bridge.Spec{Name: "lg-1", Nodes: []string{"n1"}, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Users: []string{"a"}}
	for _, tc := range []struct {
		name string
		err  error
		kind error
	}{
		{"delete foreign", d.Delete(ctx, "maint"), bridge.ErrNotOwned},
		{"update foreign", d.Update(ctx, bridge.Spec{Name: "hand"}, bridge.Reservation{Name: "hand"}), bridge.ErrNotOwned},
		{"create comma", d.Create(ctx, bridge.Spec{Name: "lg-1,2", Nodes: []string{"n1"}, Start: good.Start, End: good.End, Users: []string{"a"}}), bridge.ErrInvalidName},
		{"create over", d.Create(ctx, bridge.Spec{Name: "lg-1", Nodes: []string{"n1"}, Start: now.Add(-2 * time.Hour), End: now.Add(-time.Hour), Users: []string{"a"}}), bridge.ErrTimeInPast},
		{"create unmapped", d.Create(ctx, bridge.Spec{Name: "lg-1", Nodes: []string{"n1"}, Start: good.Start, End: good.End}), bridge.ErrOther},
	} {
		if !errors.Is(tc.err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.kind)
		}
	}
	if len(s.calls) != 0 {
		t.Fatalf("refused writes reached Slurm: %q", s.calls)
	}
}

func TestUpdateWritesOnlyWhatDiffers(t *testing.T) {
	s := &script{replies: []reply{{}}}
	d := newTestDriver(t, s, now, func(c *Config) { c.Zone = time.UTC })
	have := bridge.Reservation{Name: "lg-1", Nodes: []string{"n1"}, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Users: []string{"alice"}}
	want := have.Spec()
	want.End = now.Add(90 * time.Minute)
	want.Users, want.Accounts = nil, []string{"physics"}
	if err := d.Update(context.Background(), want, have); err != nil {
		t.Fatal(err)
	}
	if got := s.calls[0]; got != "scontrol update ReservationName=lg-1 EndTime=2026-12-01T10:30:00 Users-=alice Accounts=physics" {
		t.Fatalf("call %q", got)
	}
	if err := d.Update(context.Background(), have.Spec(), have); err != nil || len(s.calls) != 1 {
		t.Fatalf("an update with nothing to change ran %q (%v)", s.calls[1:], err)
	}
}

// TestRetriesWithBackoff: while the controller is unreachable the driver
// retries, doubling its wait up to the cap, and gives up when the context
// ends, with ErrUnavailable and the attempts counted.
func TestRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := reply{stderr: "slurm_load_reservations error: Unable to contact slurm controller (connect failure)", fail: true}
		s := &script{replies: []reply{down, down, down, down, {stdout: "No reservations in the system"}}}
		var waits []time.Duration
		last := time.Now()
		d := newTestDriver(t, s, now, func(c *Config) {
			c.Backoff = Backoff{Initial: 100 * time.Millisecond, Max: 300 * time.Millisecond}
			c.Now = time.Now
			c.OnRetry = func(op string, attempt int, err error) {
				if !errors.Is(err, bridge.ErrUnavailable) || op != "list" {
					t.Errorf("retry %d of %s after %v", attempt, op, err)
				}
			}
		})
		// Record when each attempt happened (the fake clock moves only
		// while every goroutine waits).
		inner := d.exec
		d.exec = func(ctx context.Context, name string, args []string) ([]byte, []byte, error) {
			waits = append(waits, time.Since(last))
			last = time.Now()
			return inner(ctx, name, args)
		}
		res, err := d.Reservations(context.Background())
		if err != nil || len(res) != 0 {
			t.Fatalf("after the controller came back: %v, %v", res, err)
		}
		want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
		if !slices.Equal(waits, want) {
			t.Fatalf("waits %v, want %v", waits, want)
		}

		s.replies = []reply{down}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = d.Reservations(ctx)
		var e *bridge.Error
		if !errors.As(err, &e) || !errors.Is(err, bridge.ErrUnavailable) || !strings.Contains(e.Message, "gave up after") {
			t.Fatalf("with the controller gone: %v", err)
		}
	})
}

// TestCreateAfterUnknownOutcome: the first attempt's reply is lost (the
// controller may have acted); the retry finds the name taken. The driver
// reads back: the reservation asked for is success, another is a
// duplicate.
func TestCreateAfterUnknownOutcome(t *testing.T) {
	spec := bridge.Spec{Name: "lg-1", Nodes: []string{"n1"}, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Users: []string{"alice"}}
	lost := reply{stderr: "Error creating the reservation: Socket timed out on send/recv operation", fail: true}
	dup := reply{stderr: "Error creating the reservation: Duplicate reservation name", fail: true}
	show := func(nodes string) reply {
		return reply{stdout: "ReservationName=lg-1 StartTime=2026-12-01T10:00:00 EndTime=2026-12-01T11:00:00 Duration=01:00:00 Nodes=" + nodes + " Users=alice Accounts=(null) Flags=SPEC_NODES State=INACTIVE\n"}
	}
	for _, tc := range []struct {
		name   string
		nodes  string
		wantOK bool
	}{{"ours", "n1", true}, {"someone else's", "n2", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{replies: []reply{lost, dup, show(tc.nodes)}}
			d := newTestDriver(t, s, now, func(c *Config) { c.Zone = time.UTC; c.Backoff = Backoff{Initial: time.Millisecond} })
			err := d.Create(context.Background(), spec)
			if tc.wantOK && err != nil || !tc.wantOK && !errors.Is(err, bridge.ErrDuplicateName) {
				t.Fatalf("err %v (calls %q)", err, s.calls)
			}
		})
	}
	// Without an unknown outcome a duplicate is a duplicate: no read-back.
	s := &script{replies: []reply{dup}}
	d := newTestDriver(t, s, now, nil)
	if err := d.Create(context.Background(), spec); !errors.Is(err, bridge.ErrDuplicateName) || len(s.calls) != 1 {
		t.Fatalf("plain duplicate: %v after %d calls", err, len(s.calls))
	}
	// Delete: gone after a lost reply counts as done.
	s = &script{replies: []reply{lost, {stderr: "delete_reservation ReservationName=lg-1: Requested reservation is invalid", fail: true}}}
	d = newTestDriver(t, s, now, func(c *Config) { c.Backoff = Backoff{Initial: time.Millisecond} })
	if err := d.Delete(context.Background(), "lg-1"); err != nil {
		t.Fatalf("delete after a lost reply: %v", err)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Prefix: "a b"}, {Prefix: "lg-", Zone: time.Local}, {Prefix: "lg-", Zone: time.FixedZone("XYZ", 3600)}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
