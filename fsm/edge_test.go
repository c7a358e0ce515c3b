package fsm

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// The behaviour of envelope version 3 (versionEdge), and that entries of
// older versions keep their meaning.

// v3 returns cmd as a version 3 entry.
func v3(cmd *fsmv1.Command) *fsmv1.Command {
	cmd.Version = versionEdge
	return cmd
}

// lateNotBefore is 9999-12-31T23:00:00Z: a two-hour booking from there
// ends after MaxTimeMillis.
const lateNotBefore = MaxTimeMillis + 1 - 3_600_000

func TestEndOfTimeByVersion(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1, OK, createRes("cpu", 10))
	late := func() *fsmv1.Command { return hold("", "cpu", 1, 7_200_000, withWindow(lateNotBefore, 0)) }

	// Version 1 entries keep their meaning: the booking ends after the
	// end of time (readers must cope with such rows, see ledger/replicated).
	old := h.must(10, OK, late())
	if old.GetReservation().GetEndMillis() <= MaxTimeMillis {
		t.Fatalf("version 1 hold changed meaning: %v", old.GetReservation())
	}
	for _, tc := range []struct {
		name  string
		cmd   *fsmv1.Command
		field string
	}{
		{"window end", late(), "request.duration_millis"},
		{"not_before", hold("", "cpu", 1, 1, withWindow(MaxTimeMillis+1, 0)), "request.not_before_millis"},
		{"deadline", hold("", "cpu", 1, 1, withWindow(0, MaxTimeMillis+1)), "request.deadline_millis"},
		{"exact start", hold("", "cpu", 1, 1, withStart(MaxTimeMillis+1)), "request.start_millis"},
		{"exact end", hold("", "cpu", 1, 2, withStart(MaxTimeMillis)), "request.duration_millis"},
		{"capacity window", &fsmv1.Command{Type: fsmv1.Command_TYPE_UPDATE_RESOURCE, Payload: &fsmv1.Command_UpdateResource{
			UpdateResource: &fsmv1.UpdateResource{Name: "cpu", Capacity: 1, FromMillis: proto.Int64(10), ToMillis: proto.Int64(MaxTimeMillis + 1)}}}, "update_resource.to_millis"},
		{"job", &fsmv1.Command{Type: fsmv1.Command_TYPE_SUBMIT_JOB, Payload: &fsmv1.Command_SubmitJob{SubmitJob: &fsmv1.SubmitJob{
			Part: part("cpu", 1), DurationMillis: 7_200_000, NotBeforeMillis: lateNotBefore}}}, "submit_job.duration_millis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := v3(tc.cmd)
			fe := new(FieldError)
			if err := h.f.Check(cmd); err == nil || !asFieldError(err, &fe) || fe.Path != tc.field {
				t.Fatalf("Check = %v, want a field error on %s", err, tc.field)
			}
			before := h.f.Stats()
			res := h.apply(20, cmd)
			if res.GetStatus() != INVALID || res.GetInvalid().GetField() != tc.field || res.GetInvalid().GetReason() != fe.Reason {
				t.Fatalf("Apply = %s %v, want INVALID %s: %s", res.GetStatus(), res.GetInvalid(), tc.field, fe.Reason)
			}
			if !strings.Contains(fe.Reason, "9999-12-31T23:59:59.999Z") {
				t.Errorf("reason %q does not name the end of time", fe.Reason)
			}
			if after := h.f.Stats(); !sameState(before, after) {
				t.Error("a refused entry changed the state")
			}
		})
	}
	// Without a deadline a version 3 entry never books past the end of
	// time: a window that only fits after it is rejected, not booked.
	h.must(30, OK, v3(reserve("", "cpu", 10, 1_000, withStart(lateNotBefore-1_000))))
	res := h.apply(40, v3(hold("", "cpu", 10, 3_599_000, withWindow(lateNotBefore-2_000, 0))))
	if res.GetStatus() != REJECTED {
		t.Fatalf("a hold that fits only past the end of time: %s %v", res.GetStatus(), res.GetReservation())
	}
}

// sameState compares what an entry could have changed besides the
// applied index and the log time.
func sameState(a, b Stats) bool {
	return maps.Equal(a.ByState, b.ByState) && a.Bookings == b.Bookings && a.HistoryLen == b.HistoryLen &&
		a.IdempotencyKeys == b.IdempotencyKeys && fmt.Sprint(a.Resources) == fmt.Sprint(b.Resources)
}

func asFieldError(err error, fe **FieldError) bool {
	f, ok := err.(*FieldError)
	*fe = f
	return ok
}

func TestIdempotencyFingerprint(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1, OK, createRes("cpu", 10))
	fp := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	keyed := func(amount int64, f []byte) *fsmv1.Command {
		c := reserve("", "cpu", amount, 1_000, withKey("k"), withStart(100))
		c.Fingerprint = f
		return c
	}
	first := h.must(10, OK, keyed(1, fp(1)))
	if !bytes.Equal(first.GetFingerprint(), fp(1)) {
		t.Fatalf("the result does not carry the fingerprint: %v", first)
	}
	// An honest retry (same fingerprint) gets the first result.
	again := h.must(11, OK, keyed(1, fp(1)))
	if !again.GetReplayed() || again.GetReservation().GetId() != first.GetReservation().GetId() {
		t.Fatalf("retry: %v", again)
	}
	// Another request under the same key is refused, naming the key,
	// and changes nothing.
	rows := h.f.Stats().ByState[COMMITTED]
	bad := h.apply(12, keyed(2, fp(2)))
	if bad.GetStatus() != INVALID || bad.GetInvalid().GetField() != "idempotency_key" || !strings.Contains(bad.GetMessage(), `"k"`) {
		t.Fatalf("reused key: %s %v", bad.GetStatus(), bad)
	}
	if got := h.f.Stats().ByState[COMMITTED]; got != rows {
		t.Fatalf("the refused reuse booked something: %d rows, want %d", got, rows)
	}
	// The key still answers its first request afterwards.
	if r := h.must(13, OK, keyed(1, fp(1))); !r.GetReplayed() {
		t.Fatalf("after a refused reuse: %v", r)
	}
	// An entry without a fingerprint (version < 3) matches as before.
	if r := h.must(14, OK, keyed(5, nil)); !r.GetReplayed() || r.GetReservation().GetId() != first.GetReservation().GetId() {
		t.Fatalf("old entry with the key: %v", r)
	}
	// Another owner's key is its own.
	other := keyed(2, fp(2))
	other.Owner = "bob"
	if r := h.must(15, OK, other); r.GetReplayed() {
		t.Fatalf("bob's key: %v", r)
	}
}

func TestForcedDeleteIsOneEntry(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1, OK, createRes("cpu", 1000))
	h.must(2, OK, createRes("gpu", 10))
	const n = 60
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		if i%2 == 0 {
			h.must(10, OK, hold(id, "cpu", 1, 1_000, withStart(100_000), withTTL(1_000_000)))
		} else {
			h.must(10, OK, reserve(id, "cpu", 1, 1_000, withStart(100_000)))
		}
	}
	// A reservation on gpu with a pending modification onto cpu: the
	// forced delete drops the modification and keeps the reservation.
	h.must(11, OK, reserve("g", "gpu", 1, 1_000, withStart(200_000)))
	h.must(12, OK, modify("g", []*fsmv1.Part{part("cpu", 1)}, nil, nil))

	// Without force nothing changes.
	h.must(20, CONFLICT, deleteRes("cpu"))
	del := deleteRes("cpu")
	del.GetDeleteResource().Force = true
	del.Privileged = true
	before := h.index
	h.must(30, OK, del)
	if h.index != before+1 {
		t.Fatal("the forced delete took more than one entry")
	}
	if _, ok := h.f.Resource("cpu"); ok {
		t.Fatal("cpu survived")
	}
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		want := CANCELLED
		if i%2 == 0 {
			want = fsmv1.Reservation_STATE_ABORTED
		}
		if got := h.state(id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	if g, _ := h.f.Get("g"); g.GetState() != COMMITTED || g.GetPending() != nil {
		t.Errorf("g: %v, want COMMITTED without its pending modification", g)
	}
	// Every event of the delete carries the delete's version.
	var evs int
	for _, e := range h.f.History(h.index, 0) {
		if e.GetVersion() != h.index {
			t.Errorf("event %v outside the delete's entry", e)
		}
		evs++
	}
	if evs != n+2 {
		t.Errorf("%d events in the delete's entry, want %d (one per reservation, the dropped modification, the delete)", evs, n+2)
	}
	// The new command needs version 3, which older replicas refuse.
	if MinVersion(del) != versionEdge {
		t.Errorf("MinVersion(forced delete) = %d", MinVersion(del))
	}
}

// TestModifyRaceDecidedByLog: two modifications built from the same view
// of the schedule ask for the same free slot; the log order decides: the
// first gets it, the second, applied after, sees it taken.
func TestModifyRaceDecidedByLog(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1, OK, createRes("cpu", 10))
	h.must(2, OK, reserve("a", "cpu", 5, 1_000, withStart(10_000)))
	h.must(3, OK, reserve("b", "cpu", 5, 1_000, withStart(20_000)))
	// Everything but [50_000, 51_000) is full for 10 units beside a and b.
	h.must(4, OK, reserve("wall", "cpu", 5, 40_000, withStart(10_000)))
	h.must(5, OK, reserve("wall2", "cpu", 10, 100_000, withStart(51_000)))
	win := func(id string) *fsmv1.Command {
		return &fsmv1.Command{Type: fsmv1.Command_TYPE_MODIFY, Owner: "alice", Payload: &fsmv1.Command_Modify{Modify: &fsmv1.Modify{
			Id: id, Parts: []*fsmv1.Part{part("cpu", 10)}, WindowDurationMillis: 1_000, NotBeforeMillis: 30_000, DeadlineMillis: 60_000}}}
	}
	first := h.must(10, OK, win("b"))
	if p := first.GetReservation().GetPending(); p.GetStartMillis() != 50_000 {
		t.Fatalf("first modification: %v, want the slot at 50000", p)
	}
	second := h.apply(10, win("a"))
	if second.GetStatus() != REJECTED {
		t.Fatalf("second modification for the same slot: %s %v", second.GetStatus(), second.GetReservation().GetPending())
	}
	// Fields are checked like the other modifications'.
	bad := win("a")
	bad.GetModify().StartMillis = proto.Int64(40_000)
	if res := h.apply(11, bad); res.GetInvalid().GetField() != "modify.start_millis" {
		t.Fatalf("window with a start: %v", res)
	}
	if err := h.f.Check(bad); err == nil {
		t.Fatal("Check accepted a window with a start")
	}
}
