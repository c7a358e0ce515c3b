package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

func TestReadClockOffset(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content *string // nil: no file
		want    time.Duration
		wantErr string
	}{
		{"no file", nil, 0, ""},
		{"forward", ptr("60000\n"), time.Minute, ""},
		{"backward", ptr("  -300000 "), -5 * time.Minute, ""},
		{"zero", ptr("0"), 0, ""},
		{"not a number", ptr("5m"), 0, "want integer milliseconds"},
		{"empty", ptr(""), 0, "want integer milliseconds"},
		{"absurd", ptr("9000000000000000"), 0, "beyond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readClockOffset(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestSkewedClockRereadsAtMostOncePerSecond drives the clock with a fake
// wall clock: a new offset shows only once a second has passed since the
// last read, and a malformed file keeps the previous offset.
func TestSkewedClockRereadsAtMostOncePerSecond(t *testing.T) {
	dir := t.TempDir()
	wall := time.Unix(1_800_000_000, 0)
	c := newSkewedClock(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.now = func() time.Time { return wall }
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, clockOffsetFile), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		advance time.Duration
		action  func()
		want    time.Duration // offset seen
	}{
		{0, nil, 0},
		{100 * time.Millisecond, func() { write("120000") }, 0},
		{899 * time.Millisecond, nil, 0},
		{time.Millisecond, nil, 2 * time.Minute},
		{time.Second, func() { write("garbage") }, 2 * time.Minute},
		{time.Second, func() { write("-60000") }, -time.Minute},
		{500 * time.Millisecond, func() { os.Remove(filepath.Join(dir, clockOffsetFile)) }, -time.Minute},
		{500 * time.Millisecond, nil, 0},
	}
	for i, st := range steps {
		wall = wall.Add(st.advance)
		if st.action != nil {
			st.action()
		}
		if got := c.Now().Sub(wall); got != st.want {
			t.Fatalf("step %d: offset %v, want %v", i, got, st.want)
		}
	}
}

// TestClockJumpsOnTheLeader runs a one-node agent and jumps its clock
// through the offset file. What must hold (and what the chaos nemesis
// relies on): log time never runs backwards, and a hold expires only once
// log time has reached its expiry — a forward jump legitimately advances
// log time and so expires holds sooner in wall time, a backward jump
// freezes log time until the clock catches up.
func TestClockJumpsOnTheLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agent for several seconds")
	}
	dir := t.TempDir()
	s, _ := startAgent(t, "-data-dir", dir, "-tick-interval", "100ms")
	f := s.FSM()
	setOffset := func(d time.Duration) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, clockOffsetFile), []byte(strconv.FormatInt(d.Milliseconds(), 10)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const ttl = 10 * time.Minute
	before := f.Now()
	_, err := s.applyDev(context.Background(), &fsmv1.Command{
		Type: fsmv1.Command_TYPE_HOLD, IdempotencyKey: "skew-hold", Owner: "default",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id:              "skew-hold",
			Parts:           []*fsmv1.Part{{Resource: "cpu", Amount: 1}},
			DurationMillis:  time.Hour.Milliseconds(),
			NotBeforeMillis: time.Now().Add(24 * time.Hour).UnixMilli(),
			HoldTtlMillis:   ttl.Milliseconds(),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := f.Get("skew-hold")
	if !ok || r.GetState() != fsmv1.Reservation_STATE_HELD {
		t.Fatalf("hold not HELD: %v", r)
	}
	expires := r.GetHoldExpiresMillis()
	if created := expires - ttl.Milliseconds(); created < before || created > f.Now() {
		t.Fatalf("hold expiry %d is not log time at creation (%d..%d) + TTL", expires, before, f.Now())
	}

	// watch samples log time and the hold for d, checking both properties,
	// until done (if set) reports true.
	last := f.Now()
	watch := func(what string, d time.Duration, done func(now int64, st fsmv1.Reservation_State) bool) (int64, fsmv1.Reservation_State) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			r, _ := f.Get("skew-hold")
			now := f.Now() // read after the hold: log time only grows
			if now < last {
				t.Fatalf("%s: log time ran backwards: %d after %d", what, now, last)
			}
			last = now
			st := r.GetState()
			if st == fsmv1.Reservation_STATE_EXPIRED && now < expires {
				t.Fatalf("%s: hold expired at log time %d, %v before its expiry", what, now, time.Duration(expires-now)*time.Millisecond)
			}
			if st != fsmv1.Reservation_STATE_HELD && st != fsmv1.Reservation_STATE_EXPIRED {
				t.Fatalf("%s: hold is %s", what, st)
			}
			if (done != nil && done(now, st)) || time.Now().After(deadline) {
				return now, st
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Backward jump by more than the TTL: log time stands still.
	setOffset(-3 * ttl)
	frozen := f.Now()
	now, st := watch("backward jump", 2500*time.Millisecond, nil)
	if now-frozen > 2*clockOffsetRecheck.Milliseconds() {
		t.Errorf("backward jump: log time still advanced %d ms in 2.5 s", now-frozen)
	}
	if st != fsmv1.Reservation_STATE_HELD {
		t.Fatalf("backward jump: hold is %s", st)
	}

	// Forward jump by twice the TTL: log time leaps past the expiry and
	// the hold expires — at or after its expiry in log time.
	setOffset(2 * ttl)
	now, st = watch("forward jump", 10*time.Second, func(_ int64, st fsmv1.Reservation_State) bool {
		return st == fsmv1.Reservation_STATE_EXPIRED
	})
	if st != fsmv1.Reservation_STATE_EXPIRED || now < expires {
		t.Fatalf("forward jump: hold %s at log time %d (expiry %d)", st, now, expires)
	}
	if jumped := now - time.Now().UnixMilli(); jumped < ttl.Milliseconds() {
		t.Errorf("forward jump: log time only %v ahead of the wall clock", time.Duration(jumped)*time.Millisecond)
	}

	// Heal: the offset goes, log time stays where the jump took it.
	high := f.Now()
	if err := os.Remove(filepath.Join(dir, clockOffsetFile)); err != nil {
		t.Fatal(err)
	}
	now, _ = watch("heal", 2500*time.Millisecond, nil)
	if now < high {
		t.Fatalf("heal: log time fell from %d to %d", high, now)
	}
}
