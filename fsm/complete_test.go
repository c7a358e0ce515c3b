package fsm

import (
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

func TestComplete(t *testing.T) {
	cfg := Config{DefaultHoldTTL: 100, MaxHoldTTL: 1000, Retention: 500, IdempotencyWindow: 1000}
	cases := []struct {
		name  string
		steps []step
		// After the steps: the row of "a" (state, end, requested, actual).
		end, requested, actual int64
	}{
		{"active now: completed at once, rest released", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(1000)), OK, "a", ACTIVE},
			{1040, reserve("b", "cpu", 1, 10, withStart(1050)), REJECTED, "b", GONE},
			{1040, complete("a", nil), OK, "a", COMPLETED},
			{1041, reserve("b", "cpu", 8, 10, withStart(1050)), OK, "b", COMMITTED},
			{1042, complete("a", nil), CONFLICT, "a", COMPLETED},
		}, 1040, 100, 1040},
		{"active, announced end later: shortened, completes by log time", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(1000)), OK, "a", ACTIVE},
			{1010, complete("a", proto.Int64(1060)), OK, "a", ACTIVE},
			{1011, reserve("b", "cpu", 8, 10, withStart(1060)), OK, "b", COMMITTED},
			{1059, tick(), OK, "a", ACTIVE},
			{1060, tick(), OK, "a", COMPLETED},
		}, 1060, 100, 1060},
		{"announced twice keeps the first requested duration", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(1000)), OK, "a", ACTIVE},
			{1010, complete("a", proto.Int64(1080)), OK, "a", ACTIVE},
			{1020, complete("a", proto.Int64(1080)), INVALID, "a", ACTIVE},
			{1030, complete("a", nil), OK, "a", COMPLETED},
		}, 1030, 100, 1030},
		{"committed with a future end", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(2000)), OK, "a", COMMITTED},
			{1001, complete("a", proto.Int64(2030)), OK, "a", COMMITTED},
			{1002, reserve("b", "cpu", 8, 70, withStart(2030)), OK, "b", COMMITTED},
			{2000, tick(), OK, "a", ACTIVE},
			{2030, tick(), OK, "a", COMPLETED},
		}, 2030, 100, 2030},
		{"past at means now", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(1000)), OK, "a", ACTIVE},
			{1050, complete("a", proto.Int64(1020)), OK, "a", COMPLETED},
		}, 1050, 100, 1050},
		{"active at its start uses nothing", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(1000)), OK, "a", ACTIVE},
			{1000, complete("a", nil), OK, "a", COMPLETED},
		}, 1000, 100, 1000},
		{"refusals change nothing", []step{
			{1000, hold("h", "cpu", 1, 100, withStart(2000)), OK, "h", HELD},
			{1001, complete("h", nil), CONFLICT, "h", HELD},
			{1002, reserve("a", "cpu", 4, 100, withStart(2000)), OK, "a", COMMITTED},
			{1003, complete("a", nil), INVALID, "a", COMMITTED},                // not begun: cancel instead
			{1004, complete("a", proto.Int64(2000)), INVALID, "a", COMMITTED},  // at its start, not begun
			{1005, complete("a", proto.Int64(2100)), INVALID, "a", COMMITTED},  // at the end
			{1006, complete("a", proto.Int64(1<<62)), INVALID, "a", COMMITTED}, // after the end
			{1007, complete("a", nil, withOwner("mallory")), DENIED, "a", COMMITTED},
			{1008, complete("nope", nil), NOTFOUND, "", 0},
			{1009, complete("", nil), INVALID, "", 0},
			{1010, modify("a", nil, proto.Int64(3000), nil), OK, "a", COMMITTED},
			{1011, complete("a", proto.Int64(2050)), CONFLICT, "a", COMMITTED}, // pending modification
		}, 2100, 0, 0},
		{"modification commit clears an announced end", []step{
			{1000, reserve("a", "cpu", 4, 100, withStart(2000)), OK, "a", COMMITTED},
			{1001, complete("a", proto.Int64(2050)), OK, "a", COMMITTED},
			{1002, modify("a", nil, proto.Int64(3000), proto.Int64(3200)), OK, "a", COMMITTED},
			{1003, commit("a"), OK, "a", COMMITTED},
		}, 3200, 0, 0},
		{"operator may complete another owner's", []step{
			{1000, reserve("a", "cpu", 4, 100, withStart(1000)), OK, "a", ACTIVE},
			{1010, complete("a", nil, withOwner("op"), func(c *fsmv1.Command) { c.Privileged = true }), OK, "a", COMPLETED},
		}, 1010, 100, 1010},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cfg)
			h.must(1000, OK, createRes("cpu", 8))
			h.run(tc.steps)
			r, ok := h.f.Get("a")
			if !ok {
				t.Fatal("a is gone")
			}
			if r.GetEndMillis() != tc.end || r.GetRequestedDurationMillis() != tc.requested || r.GetActualEndMillis() != tc.actual {
				t.Fatalf("a: end %d requested %d actual %d, want %d %d %d",
					r.GetEndMillis(), r.GetRequestedDurationMillis(), r.GetActualEndMillis(), tc.end, tc.requested, tc.actual)
			}
		})
	}
}

// TestCompleteEvents checks the events of an announced and an immediate
// early completion, and that a restored replica keeps the shortened row.
func TestCompleteEvents(t *testing.T) {
	h := newHarness(t, propConfig)
	h.must(1000, OK, createRes("cpu", 8))
	h.must(1000, OK, reserve("a", "cpu", 8, 100, withStart(1000)))
	h.must(1000, OK, reserve("b", "cpu", 8, 100, withStart(1100)))
	from := h.index + 1
	h.must(1010, OK, complete("a", proto.Int64(1050)))
	h.must(1020, OK, complete("a", nil))

	evs := h.f.History(from, 10)
	var got []fsmv1.Event_Type
	for _, e := range evs {
		got = append(got, e.GetType())
	}
	want := []fsmv1.Event_Type{fsmv1.Event_TYPE_SHORTENED, fsmv1.Event_TYPE_COMPLETED}
	if !slicesEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}

	// Snapshot and restore: the shortened row and the freed capacity carry over.
	h.must(1030, OK, complete("b", proto.Int64(1150)))
	g := &harness{t: t, f: restored(t, snapshotBytes(t, h.f)), index: h.index}
	for _, x := range []*harness{h, g} {
		x.must(1031, OK, reserve("c", "cpu", 8, 50, withStart(1150)))
		checkInvariants(t, x.f)
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
