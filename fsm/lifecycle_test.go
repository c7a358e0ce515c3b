package fsm

import (
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

const (
	OK       = fsmv1.Result_STATUS_OK
	REJECTED = fsmv1.Result_STATUS_REJECTED
	INVALID  = fsmv1.Result_STATUS_INVALID
	NOTFOUND = fsmv1.Result_STATUS_NOT_FOUND
	CONFLICT = fsmv1.Result_STATUS_CONFLICT
	DENIED   = fsmv1.Result_STATUS_PERMISSION_DENIED

	HELD      = fsmv1.Reservation_STATE_HELD
	COMMITTED = fsmv1.Reservation_STATE_COMMITTED
	ACTIVE    = fsmv1.Reservation_STATE_ACTIVE
	COMPLETED = fsmv1.Reservation_STATE_COMPLETED
	ABORTED   = fsmv1.Reservation_STATE_ABORTED
	EXPIRED   = fsmv1.Reservation_STATE_EXPIRED
	CANCELLED = fsmv1.Reservation_STATE_CANCELLED
	DEGRADED  = fsmv1.Reservation_STATE_DEGRADED
	GONE      = fsmv1.Reservation_STATE_UNKNOWN
)

// step applies cmd at now, expects status, then expects id (if set) in state.
type step struct {
	now    int64
	cmd    *fsmv1.Command
	status fsmv1.Result_Status
	id     string
	state  fsmv1.Reservation_State
}

// run applies the steps in order, checking each one's status, the state
// it expects, and the invariants after it.
func (h *harness) run(steps []step) {
	h.t.Helper()
	for i, s := range steps {
		res := h.apply(s.now, s.cmd)
		if res.GetStatus() != s.status {
			h.t.Fatalf("step %d (%s): status %s (%s), want %s", i, s.cmd.GetType(), res.GetStatus(), res.GetMessage(), s.status)
		}
		if s.id != "" {
			if got := h.state(s.id); got != s.state {
				h.t.Fatalf("step %d (%s): %s is %s, want %s", i, s.cmd.GetType(), s.id, got, s.state)
			}
		}
		checkInvariants(h.t, h.f)
	}
}

func TestLifecycle(t *testing.T) {
	cfg := Config{DefaultHoldTTL: 100, MaxHoldTTL: 1000, Retention: 500, IdempotencyWindow: 1000}
	cases := []struct {
		name  string
		steps []step
	}{
		{"hold commit activate complete drop", []step{
			{1000, hold("a", "cpu", 4, 50, withStart(1100)), OK, "a", HELD},
			{1010, commit("a"), OK, "a", COMMITTED},
			{1100, tick(), OK, "a", ACTIVE},
			{1149, tick(), OK, "a", ACTIVE},
			{1150, tick(), OK, "a", COMPLETED},
			{1649, tick(), OK, "a", COMPLETED},
			{1650, tick(), OK, "a", GONE},
		}},
		{"hold abort", []step{
			{1000, hold("a", "cpu", 4, 50), OK, "a", HELD},
			{1001, abort("a"), OK, "a", ABORTED},
			{1002, commit("a"), CONFLICT, "a", ABORTED},
			{1003, abort("a"), CONFLICT, "a", ABORTED},
		}},
		{"hold expires lazily before a commit", []step{
			{1000, hold("a", "cpu", 4, 50, withStart(5000), withTTL(30)), OK, "a", HELD},
			{1029, reserve("b", "cpu", 1, 1, withStart(5000)), OK, "a", HELD},
			{1030, commit("a"), CONFLICT, "a", EXPIRED},
		}},
		{"hold expires by tick", []step{
			{1000, hold("a", "cpu", 4, 50, withStart(5000)), OK, "a", HELD},
			{1099, tick(), OK, "a", HELD},
			{1100, tick(), OK, "a", EXPIRED},
		}},
		{"reserve is hold plus commit", []step{
			{1000, reserve("a", "cpu", 8, 50, withStart(2000)), OK, "a", COMMITTED},
			{1001, reserve("b", "cpu", 1, 50, withStart(2000)), REJECTED, "b", GONE},
			{1002, cancel("a"), OK, "a", CANCELLED},
			{1003, reserve("b", "cpu", 8, 50, withStart(2000)), OK, "b", COMMITTED},
		}},
		{"cancel active releases the rest", []step{
			{1000, reserve("a", "cpu", 8, 100, withStart(1000)), OK, "a", ACTIVE},
			{1050, reserve("b", "cpu", 1, 10, withStart(1060)), REJECTED, "b", GONE},
			{1051, cancel("a"), OK, "a", CANCELLED},
			{1052, reserve("b", "cpu", 8, 10, withStart(1060)), OK, "b", COMMITTED},
		}},
		{"cannot cancel a hold or commit twice", []step{
			{1000, hold("a", "cpu", 1, 10, withStart(5000)), OK, "a", HELD},
			{1001, cancel("a"), CONFLICT, "a", HELD},
			{1002, commit("a"), OK, "a", COMMITTED},
			{1003, commit("a"), CONFLICT, "a", COMMITTED},
		}},
		{"owner check", []step{
			{1000, hold("a", "cpu", 1, 10, withStart(5000)), OK, "a", HELD},
			{1001, commit("a", withOwner("mallory")), DENIED, "a", HELD},
			{1002, abort("a", withOwner("mallory")), DENIED, "a", HELD},
			{1003, commit("a", withOwner("mallory"), func(c *fsmv1.Command) { c.Privileged = true }), OK, "a", COMMITTED},
		}},
		{"not found and invalid", []step{
			{1000, commit("nope"), NOTFOUND, "", 0},
			{1000, commit(""), INVALID, "", 0},
			{1000, hold("a", "gpu", 1, 10), NOTFOUND, "a", GONE},
			{1000, hold("a", "cpu", 0, 10), INVALID, "a", GONE},
			{1000, hold("a", "cpu", 9, 10), INVALID, "a", GONE},
			{1000, hold("a", "cpu", 1, 0), INVALID, "a", GONE},
			{1000, hold("a b", "cpu", 1, 10), INVALID, "a b", GONE},
			{1000, hold("r-1", "cpu", 1, 10), INVALID, "r-1", GONE},
			{1000, hold("a", "cpu", 1, 10, withTTL(5000)), INVALID, "a", GONE},
			{1000, hold("a", "cpu", 1, 10, withStart(999)), INVALID, "a", GONE},
			{1000, hold("a", "cpu", 1, 10, withWindow(2000, 2005)), INVALID, "a", GONE},
			{1000, hold("a", "cpu", 1, 10, withParts(part("cpu", 1), part("cpu", 1))), INVALID, "a", GONE},
		}},
		{"duplicate id", []step{
			{1000, hold("a", "cpu", 1, 10), OK, "a", HELD},
			{1001, hold("a", "cpu", 1, 10), CONFLICT, "a", HELD},
		}},
		{"window passed in log time is a rejection", []step{
			{1000, hold("a", "cpu", 1, 10, withWindow(900, 1005)), REJECTED, "a", GONE},
		}},
		{"earliest fit inside the window", []step{
			{1000, reserve("a", "cpu", 6, 100, withStart(1000)), OK, "a", ACTIVE},
			{1001, hold("b", "cpu", 4, 50, withWindow(1000, 1200)), OK, "b", HELD},
		}},
		{"resource in use cannot be deleted", []step{
			{1000, hold("a", "cpu", 1, 10), OK, "a", HELD},
			{1001, deleteRes("cpu"), CONFLICT, "a", HELD},
			{1002, abort("a"), OK, "a", ABORTED},
			{1003, deleteRes("cpu"), OK, "a", ABORTED},
			{1004, deleteRes("cpu"), NOTFOUND, "", 0},
		}},
		{"capacity conflict lists violated reservations", []step{
			{1000, reserve("a", "cpu", 6, 100, withStart(2000)), OK, "a", COMMITTED},
			{1001, updateRes("cpu", 4, proto.Int64(1500), proto.Int64(2500)), CONFLICT, "a", COMMITTED},
			{1002, updateRes("cpu", 6, proto.Int64(1500), proto.Int64(2500)), OK, "a", COMMITTED},
			{1003, reserve("b", "cpu", 1, 10, withStart(2000)), REJECTED, "b", GONE},
			{1004, reserve("b", "cpu", 3, 10, withStart(2500)), OK, "b", COMMITTED},
			{1005, updateRes("cpu", 16, nil, nil), OK, "", 0},
			{1006, reserve("c", "cpu", 10, 10, withStart(2000)), OK, "c", COMMITTED},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cfg)
			h.must(1000, OK, createRes("cpu", 8))
			h.run(tc.steps)
		})
	}
}

func TestResultDetails(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(0, OK, createRes("cpu", 8))
	h.must(0, OK, reserve("a", "cpu", 8, 100, withStart(1000)))

	res := h.must(0, REJECTED, reserve("b", "cpu", 1, 100, withWindow(950, 1150)))
	if r := res.GetRejected(); !r.GetLaterOk() || r.GetLaterStartMillis() != 1100 {
		t.Errorf("rejected detail = %v, want later start 1100", r)
	}
	res = h.must(0, INVALID, hold("b", "cpu", -1, 100))
	if f := res.GetInvalid().GetField(); f != "request.parts[0].amount" {
		t.Errorf("invalid field = %q", f)
	}
	res = h.must(0, INVALID, hold("b", "cpu", 1, 100, withWindow(0, 50)))
	if f := res.GetInvalid().GetField(); f != "request.deadline_millis" {
		t.Errorf("invalid field = %q", f)
	}
	res = h.must(0, CONFLICT, updateRes("cpu", 2, proto.Int64(1050), proto.Int64(1060)))
	if c := res.GetConflict(); c.GetKind() != fsmv1.Conflict_KIND_CAPACITY || len(c.GetViolatedIds()) != 1 || c.GetViolatedIds()[0] != "a" {
		t.Errorf("conflict detail = %v", c)
	}
	res = h.must(0, CONFLICT, commit("a"))
	if c := res.GetConflict(); c.GetKind() != fsmv1.Conflict_KIND_WRONG_STATE || c.GetState() != COMMITTED {
		t.Errorf("conflict detail = %v", c)
	}
	res = h.must(0, OK, hold("", "cpu", 1, 10))
	if id := res.GetReservation().GetId(); id != AutoID(h.index) {
		t.Errorf("auto id = %q, want %q", id, AutoID(h.index))
	}
	if res.GetVersion() != h.index {
		t.Errorf("version = %d, want %d", res.GetVersion(), h.index)
	}
}

func TestResultShowsStateAfterEntry(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createRes("cpu", 8))
	res := h.must(1000, OK, reserve("a", "cpu", 1, 10, withStart(1000)))
	if st := res.GetReservation().GetState(); st != ACTIVE {
		t.Fatalf("reservation starting now reported %s, want ACTIVE", st)
	}
	if ev := h.f.History(res.GetVersion(), 0); len(ev) != 2 || ev[1].GetType() != fsmv1.Event_TYPE_ACTIVATED {
		t.Fatalf("events of the entry: %v", ev)
	}
}

func TestLogTimeNeverRunsBackwards(t *testing.T) {
	h := newHarness(t, Config{DefaultHoldTTL: 100})
	h.must(5000, OK, createRes("cpu", 8))
	res := h.must(1000, OK, hold("a", "cpu", 1, 10))
	if res.GetNowMillis() != 5000 || res.GetReservation().GetStartMillis() != 5000 {
		t.Fatalf("now=%d start=%d, want 5000 (the leader clock jumped back)", res.GetNowMillis(), res.GetReservation().GetStartMillis())
	}
	if h.f.Now() != 5000 {
		t.Fatalf("Now() = %d", h.f.Now())
	}
}

func TestModifyTwoPhase(t *testing.T) {
	setup := func(t *testing.T) *harness {
		h := newHarness(t, Config{DefaultHoldTTL: 100})
		h.must(0, OK, createRes("cpu", 8))
		h.must(0, OK, reserve("a", "cpu", 4, 100, withStart(1000)))
		// The new shape overlaps the old one: it must fit beside it.
		h.must(0, OK, modify("a", []*fsmv1.Part{part("cpu", 4)}, proto.Int64(1050), nil))
		r, _ := h.f.Get("a")
		if p := r.GetPending(); p == nil || p.GetStartMillis() != 1050 || p.GetEndMillis() != 1150 {
			t.Fatalf("pending = %v", p)
		}
		// Old and new are both held: [1050,1100) is full.
		h.must(1, REJECTED, reserve("x", "cpu", 1, 10, withStart(1060)))
		return h
	}
	t.Run("commit swaps", func(t *testing.T) {
		h := setup(t)
		res := h.must(2, OK, commit("a"))
		r := res.GetReservation()
		if r.GetStartMillis() != 1050 || r.GetEndMillis() != 1150 || r.GetPending() != nil || r.GetState() != COMMITTED {
			t.Fatalf("after commit: %v", r)
		}
		h.must(3, OK, reserve("x", "cpu", 4, 50, withStart(1000)))
		h.must(4, REJECTED, reserve("y", "cpu", 5, 10, withStart(1100)))
		checkInvariants(t, h.f)
	})
	t.Run("abort keeps the original slot", func(t *testing.T) {
		h := setup(t)
		res := h.must(2, OK, abort("a"))
		r := res.GetReservation()
		if r.GetStartMillis() != 1000 || r.GetEndMillis() != 1100 || r.GetPending() != nil || r.GetState() != COMMITTED {
			t.Fatalf("after abort: %v", r)
		}
		h.must(3, OK, reserve("x", "cpu", 4, 50, withStart(1100)))
		h.must(4, REJECTED, reserve("y", "cpu", 5, 10, withStart(1000)))
		checkInvariants(t, h.f)
	})
	t.Run("expiry keeps the original slot", func(t *testing.T) {
		h := setup(t)
		h.must(100, OK, tick())
		r, _ := h.f.Get("a")
		if r.GetPending() != nil || r.GetStartMillis() != 1000 || r.GetState() != COMMITTED {
			t.Fatalf("after expiry: %v", r)
		}
		checkInvariants(t, h.f)
	})
	t.Run("modification that does not fit is rejected, original kept", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.must(0, OK, createRes("cpu", 8))
		h.must(0, OK, reserve("a", "cpu", 6, 100, withStart(1000)))
		res := h.must(0, REJECTED, modify("a", []*fsmv1.Part{part("cpu", 6)}, proto.Int64(1050), nil))
		if r := res.GetRejected(); !r.GetLaterOk() || r.GetLaterStartMillis() != 1100 {
			t.Fatalf("rejected modify: later start %v, want 1100", r)
		}
		h.must(0, CONFLICT, commit("a"))
		r, _ := h.f.Get("a")
		if r.GetPending() != nil || r.GetStartMillis() != 1000 {
			t.Fatalf("after rejected modify: %v", r)
		}
		h.must(0, INVALID, modify("a", nil, proto.Int64(0), nil))
		h.must(0, INVALID, modify("a", nil, nil, proto.Int64(1000)))
	})
	t.Run("activation drops a pending modification", func(t *testing.T) {
		h := newHarness(t, Config{DefaultHoldTTL: 10_000})
		h.must(0, OK, createRes("cpu", 8))
		h.must(0, OK, reserve("a", "cpu", 2, 100, withStart(1000)))
		h.must(0, OK, modify("a", nil, proto.Int64(2000), nil))
		h.must(1000, OK, tick())
		r, _ := h.f.Get("a")
		if r.GetPending() != nil || r.GetState() != ACTIVE {
			t.Fatalf("after start: %v", r)
		}
		checkInvariants(t, h.f)
	})
}

func TestIdempotency(t *testing.T) {
	h := newHarness(t, Config{IdempotencyWindow: 1000})
	h.must(0, OK, createRes("cpu", 8))
	first := h.must(10, OK, hold("", "cpu", 2, 10, withKey("k1"), withStart(5000)))
	second := h.must(20, OK, hold("", "cpu", 2, 10, withKey("k1"), withStart(5000)))
	if !second.GetReplayed() || first.GetReplayed() {
		t.Fatalf("replayed flags: first %v second %v", first.GetReplayed(), second.GetReplayed())
	}
	second.Replayed = false
	if !proto.Equal(first, second) {
		t.Fatalf("replay differs:\n%v\n%v", first, second)
	}
	if n := h.f.Stats().ByState[HELD]; n != 1 {
		t.Fatalf("%d holds after a replay, want 1", n)
	}
	// Another owner with the same key is a different request.
	other := h.must(30, OK, hold("", "cpu", 2, 10, withKey("k1"), withOwner("bob")))
	if other.GetReplayed() || other.GetReservation().GetId() == first.GetReservation().GetId() {
		t.Fatalf("other owner got the first result: %v", other)
	}
	// Rejections are remembered as well.
	rej := h.must(40, INVALID, hold("", "cpu", 0, 10, withKey("k2")))
	again := h.must(50, INVALID, hold("", "cpu", 1, 10, withKey("k2")))
	if !again.GetReplayed() || again.GetVersion() != rej.GetVersion() {
		t.Fatalf("replay of a rejection: %v", again)
	}
	// After the window, the key is forgotten and the request runs again.
	h.must(1010, OK, tick())
	third := h.must(1011, OK, hold("", "cpu", 2, 10, withKey("k1"), withStart(5000)))
	if third.GetReplayed() || third.GetReservation().GetId() == first.GetReservation().GetId() {
		t.Fatalf("key not forgotten after the window: %v", third)
	}
	// (alice,k1)@10 was pruned; (bob,k1)@30, (alice,k2)@40, (alice,k1)@1011 remain.
	if st := h.f.Stats(); st.IdempotencyKeys != 3 {
		t.Fatalf("%d keys remembered, want 3", st.IdempotencyKeys)
	}
}

func TestHistoryAndNotify(t *testing.T) {
	h := newHarness(t, Config{HistoryLimit: 5, DefaultHoldTTL: 10})
	ch := h.f.Notify()
	h.must(0, OK, createRes("cpu", 8))
	select {
	case <-ch:
	default:
		t.Fatal("Notify channel not closed by Apply")
	}
	h.must(0, OK, hold("a", "cpu", 1, 10, withStart(100)))
	h.must(0, OK, hold("b", "cpu", 1, 10, withStart(100)))
	// One entry expiring both holds yields two events of one version.
	h.must(10, OK, tick())
	ev := h.f.History(0, 0)
	want := []fsmv1.Event_Type{fsmv1.Event_TYPE_RESOURCE_CREATED, fsmv1.Event_TYPE_HELD, fsmv1.Event_TYPE_HELD, fsmv1.Event_TYPE_EXPIRED, fsmv1.Event_TYPE_EXPIRED}
	if len(ev) != len(want) {
		t.Fatalf("history has %d events, want %d", len(ev), len(want))
	}
	for i, e := range ev {
		if e.GetType() != want[i] {
			t.Errorf("event %d: %s, want %s", i, e.GetType(), want[i])
		}
	}
	if ev[3].GetVersion() != 4 || ev[4].GetVersion() != 4 || ev[3].GetSeq() != 0 || ev[4].GetSeq() != 1 {
		t.Errorf("expiry events: %v %v", ev[3], ev[4])
	}
	// A page never splits an entry.
	if got := h.f.History(2, 2); len(got) != 2 || got[1].GetVersion() != 3 {
		t.Errorf("History(2,2) = %v", got)
	}
	if got := h.f.History(3, 2); len(got) != 1 {
		t.Errorf("History(3,2) = %d events, want 1 (cut before entry 4)", len(got))
	}
	if got := h.f.History(4, 1); len(got) != 2 {
		t.Errorf("History(4,1) = %d events, want the whole entry (2)", len(got))
	}
	// Bounded: a sixth event pushes the oldest out.
	h.must(11, OK, hold("c", "cpu", 1, 10, withStart(100)))
	if got := h.f.OldestVersion(); got != 2 {
		t.Errorf("oldest version %d, want 2", got)
	}
}

func TestListFilterAndPaging(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(0, OK, createRes("cpu", 100))
	h.must(0, OK, createRes("gpu", 10))
	for i := range 25 {
		id := string(rune('a'+i)) + "x"
		if i%2 == 0 {
			h.must(0, OK, reserve(id, "cpu", 1, 10, withStart(int64(100*i))))
		} else {
			h.must(0, OK, hold(id, "gpu", 1, 10, withStart(int64(100*i)), withOwner("bob")))
		}
	}
	var all []string
	tok := ""
	for {
		page, next, err := h.f.List(Filter{PageSize: 7, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			all = append(all, r.GetId())
		}
		if next == "" {
			break
		}
		tok = next
	}
	if len(all) != 25 {
		t.Fatalf("paged through %d, want 25", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1] >= all[i] {
			t.Fatalf("not sorted: %q before %q", all[i-1], all[i])
		}
	}
	cases := []struct {
		f    Filter
		want int
	}{
		{Filter{Owner: "bob"}, 12},
		{Filter{Resource: "cpu"}, 13},
		{Filter{States: []fsmv1.Reservation_State{HELD}}, 12},
		{Filter{FromMillis: 0, ToMillis: 1000}, 10},
		{Filter{FromMillis: 1005, ToMillis: 1006}, 1},
		{Filter{Resource: "gpu", FromMillis: 2000}, 2},
	}
	for _, c := range cases {
		got, _, err := h.f.List(c.f)
		if err != nil || len(got) != c.want {
			t.Errorf("List(%+v) = %d, %v; want %d", c.f, len(got), err, c.want)
		}
	}
	if _, _, err := h.f.List(Filter{PageToken: "!!"}); err == nil {
		t.Error("malformed page token accepted")
	}
}

func TestReadSide(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(100, OK, createRes("cpu", 8))
	h.must(100, OK, reserve("a", "cpu", 6, 100, withStart(200)))
	d, err := h.f.Find(planner.Request{Parts: []planner.Part{{Resource: "cpu", Amount: 4}}, Duration: 150, NotBefore: 0, Deadline: planner.MaxTime})
	if err != nil || !d.Fits || d.Start != 300 {
		t.Fatalf("Find = %+v, %v; want start 300", d, err)
	}
	offers, err := h.f.Offers(planner.Request{Parts: []planner.Part{{Resource: "cpu", Amount: 2}}, Duration: 50, Deadline: planner.MaxTime}, 3)
	if err != nil || len(offers) != 3 || offers[0] != 100 {
		t.Fatalf("Offers = %v, %v", offers, err)
	}
	blocks, err := h.f.Availability("cpu", 0, 400)
	if err != nil || len(blocks) != 3 || blocks[1].Free != 2 {
		t.Fatalf("Availability = %v, %v", blocks, err)
	}
	if _, err := h.f.Availability("gpu", 0, 10); err == nil {
		t.Fatal("unknown resource accepted")
	}
	h.must(250, OK, tick())
	st := h.f.Stats()
	if len(st.Resources) != 1 || st.Resources[0].InUse != 6 || st.Resources[0].Capacity != 8 || st.ByState[ACTIVE] != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	if rs := h.f.Resources(); len(rs) != 1 || rs[0].GetCapacity() != 8 {
		t.Fatalf("Resources = %v", rs)
	}
}

// checkInvariants verifies the tables against the planner: no overbooking
// at any instant from the log time on, and every live reservation booked.
func checkInvariants(t testing.TB, f *FSM) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	live := 0
	rows := allRows(t, s)
	checkEnded(t, s, rows)
	for id, r := range rows {
		switch r.GetState() {
		case HELD, COMMITTED, ACTIVE, DEGRADED, fsmv1.Reservation_STATE_PENDING_APPROVAL:
			if r.GetEndMillis() <= s.now {
				t.Fatalf("%s is %s but ended at %d <= now %d", id, r.GetState(), r.GetEndMillis(), s.now)
			}
			if scheduled(r) {
				break // checkScheduled
			}
			live++
			if _, ok := s.plan.Get(id); !ok {
				t.Fatalf("live reservation %s not booked in the planner", id)
			}
			if r.GetPending() != nil {
				live++
				if _, ok := s.plan.Get(modKey(id)); !ok {
					t.Fatalf("pending modification of %s not booked", id)
				}
			}
		}
		// Every state agrees with log time: what time makes due has happened.
		switch st := r.GetState(); {
		case (st == HELD || st == fsmv1.Reservation_STATE_PENDING_APPROVAL) && r.GetHoldExpiresMillis() <= s.now:
			t.Fatalf("hold %s outlived its expiry %d (now %d)", id, r.GetHoldExpiresMillis(), s.now)
		case st == COMMITTED && r.GetStartMillis() <= s.now:
			t.Fatalf("%s still COMMITTED at %d, started at %d", id, s.now, r.GetStartMillis())
		case (st == ACTIVE || st == DEGRADED) && (r.GetStartMillis() > s.now || r.GetEndMillis() <= s.now):
			t.Fatalf("%s ACTIVE at %d outside [%d,%d)", id, s.now, r.GetStartMillis(), r.GetEndMillis())
		case isTerminal(st) && addSat(r.GetUpdatedMillis(), s.retention) <= s.now && s.dropBudget > 0:
			// (An entry that spent its drop budget leaves the rest for
			// the next.)
			t.Fatalf("%s retained past its retention (updated %d, now %d)", id, r.GetUpdatedMillis(), s.now)
		}
		if p := r.GetPending(); p != nil {
			if r.GetState() != COMMITTED || p.GetHoldExpiresMillis() <= s.now || p.GetStartMillis() <= s.now {
				t.Fatalf("%s: stale pending modification %v at %d", id, p, s.now)
			}
		}
	}
	live += checkScheduled(t, s)
	live += checkUnitMapping(t, s, rows)
	checkLimitUsage(t, s, rows)
	if s.plan.Len() != live {
		t.Fatalf("planner has %d bookings, table %d", s.plan.Len(), live)
	}
	// Brute-force booked profile per resource vs. planner free blocks.
	for name := range s.resources {
		blocks, err := s.plan.Availability(name, s.now, planner.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if b.Free < 0 {
				t.Fatalf("%s overbooked over [%d,%d): free %d", name, b.Start, b.End, b.Free)
			}
		}
	}
	for id, r := range rows {
		if isTerminal(r.GetState()) {
			continue
		}
		shapes := []struct {
			parts      []*fsmv1.Part
			start, end int64
		}{{bookedParts(s, r), r.GetStartMillis(), r.GetEndMillis()}}
		if p := r.GetPending(); p != nil {
			shapes = append(shapes, shapes[0])
			shapes[1].parts, shapes[1].start, shapes[1].end = p.GetParts(), p.GetStartMillis(), p.GetEndMillis()
		}
		// The booked profile peaks at some start: checking every start
		// instant covers every maximum.
		for _, shape := range shapes {
			from := max(shape.start, s.now)
			for _, p := range shape.parts {
				booked := int64(0)
				for _, o := range rows {
					if isTerminal(o.GetState()) {
						continue
					}
					booked += overlapAmount(bookedParts(s, o), o.GetStartMillis(), o.GetEndMillis(), p.GetResource(), from)
					if pd := o.GetPending(); pd != nil {
						booked += overlapAmount(pd.GetParts(), pd.GetStartMillis(), pd.GetEndMillis(), p.GetResource(), from)
					}
				}
				booked += downsAt(s, p.GetResource(), from)
				u, err := s.plan.Usage(p.GetResource(), from, from+1)
				if err != nil {
					t.Fatal(err)
				}
				if booked != u.BookedArea {
					t.Fatalf("%s: table books %d of %s at %d, planner %d", id, booked, p.GetResource(), from, u.BookedArea)
				}
				if booked > u.CapacityArea {
					t.Fatalf("%s overbooked at %d: %d > %d", p.GetResource(), from, booked, u.CapacityArea)
				}
			}
		}
	}
}

// overlapAmount is the amount a shape books on res at instant at.
func overlapAmount(parts []*fsmv1.Part, start, end int64, res string, at int64) int64 {
	if at < start || at >= end {
		return 0
	}
	for _, p := range parts {
		if p.GetResource() == res {
			return p.GetAmount()
		}
	}
	return 0
}
