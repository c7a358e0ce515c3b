package fsm

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

var policyConfig = Config{DefaultHoldTTL: 100, MaxHoldTTL: 1000, Retention: 5000, IdempotencyWindow: 1000}

// events returns the types of the events of entries from index from on.
func (h *harness) events(from uint64) []fsmv1.Event_Type {
	var out []fsmv1.Event_Type
	for _, e := range h.f.History(from, 0) {
		out = append(out, e.GetType())
	}
	return out
}

func (h *harness) row(id string) *fsmv1.Reservation {
	h.t.Helper()
	r, ok := h.f.Get(id)
	if !ok {
		h.t.Fatalf("%s not found", id)
	}
	return r
}

func moves(ms ...*fsmv1.Move) []*fsmv1.Move { return ms }

func mv(id string, from, to int64) *fsmv1.Move {
	return &fsmv1.Move{Id: id, FromMillis: from, ToMillis: to}
}

func sameMoves(a, b []*fsmv1.Move) bool {
	return slices.EqualFunc(a, b, func(x, y *fsmv1.Move) bool { return proto.Equal(x, y) })
}

// TestMoveVariable: a reservation that collides only with a planned
// variable job is admitted on a MOVE_VARIABLE resource and pushes the job
// later (REPLANNED, Result.moved, pushes); the same request is refused on
// a REJECT resource; the push limit pins the job; freed capacity pulls the
// job back earlier; the job then runs by log time.
func TestMoveVariable(t *testing.T) {
	cases := []struct {
		name   string
		policy *fsmv1.PolicySpec
		steps  []step
		// After the steps: job j's start, pushes and state.
		start  int64
		pushes uint32
		state  fsmv1.Reservation_State
	}{
		{"REJECT refuses and leaves the job", nil, []step{
			{1000, reserve("r", "batch", 5, 100, withStart(1150)), REJECTED, "j", COMMITTED},
		}, 1100, 0, COMMITTED},
		{"MOVE_VARIABLE pushes the job after the reservation", spec(MOVE, 0, 0), []step{
			{1000, reserve("r", "batch", 5, 100, withStart(1150)), OK, "r", COMMITTED},
		}, 1250, 1, COMMITTED},
		{"a hold pushes too, its abort pulls the job back", spec(MOVE, 0, 0), []step{
			{1000, hold("r", "batch", 5, 100, withStart(1150)), OK, "r", HELD},
			{1010, abort("r"), OK, "r", ABORTED},
		}, 1100, 1, COMMITTED},
		{"expiry of a hold pulls the job back", spec(MOVE, 0, 0), []step{
			{1000, hold("r", "batch", 5, 100, withStart(1150), withTTL(50)), OK, "r", HELD},
			{1050, tick(), OK, "r", EXPIRED},
		}, 1100, 1, COMMITTED},
		{"push limit pins the job", spec(MOVE, 0, 1), []step{
			{1000, reserve("r", "batch", 5, 100, withStart(1150)), OK, "j", COMMITTED},
			{1001, reserve("s", "batch", 5, 100, withStart(1260)), REJECTED, "s", GONE},
		}, 1250, 1, COMMITTED},
		{"a request without a start takes the earliest rigid fit, moving nothing", spec(MOVE, 0, 0), []step{
			{1000, reserve("r", "batch", 5, 100, withWindow(1150, 0)), OK, "r", COMMITTED},
		}, 1100, 0, COMMITTED},
		{"cancel pulls the job back to the log time", spec(MOVE, 0, 0), []step{
			{1000, reserve("r", "batch", 5, 100, withStart(1150)), OK, "r", COMMITTED},
			{1120, cancel("r"), OK, "r", CANCELLED},
		}, 1120, 1, ACTIVE},
		{"the job runs and completes by log time", spec(MOVE, 0, 0), []step{
			{1000, reserve("r", "batch", 5, 100, withStart(1150)), OK, "r", COMMITTED},
			{1249, tick(), OK, "j", COMMITTED},
			{1250, tick(), OK, "j", ACTIVE},
			{1350, tick(), OK, "j", COMPLETED},
		}, 1250, 1, COMPLETED},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, policyConfig)
			h.must(1000, OK, createPolicyRes("batch", 10, tc.policy))
			res := h.must(1000, OK, submitJob("j", "batch", 10, 100, 1100))
			if r := res.GetReservation(); r.GetKind() != JOB || r.GetStartMillis() != 1100 || r.GetEndMillis() != 1200 ||
				r.GetState() != COMMITTED || r.GetNotBeforeMillis() != 1100 || r.GetProbabilityPermille() != 1000 {
				t.Fatalf("submitted job %v", r)
			}
			from := h.index + 1
			h.run(tc.steps)
			j := h.row("j")
			if j.GetStartMillis() != tc.start || j.GetEndMillis() != tc.start+100 || j.GetPushes() != tc.pushes || j.GetState() != tc.state {
				t.Fatalf("job: start %d pushes %d %s, want %d %d %s", j.GetStartMillis(), j.GetPushes(), j.GetState(), tc.start, tc.pushes, tc.state)
			}
			replanned := slices.Contains(h.events(from), fsmv1.Event_TYPE_REPLANNED)
			if replanned != (tc.pushes > 0 || tc.start != 1100) {
				t.Fatalf("REPLANNED event %v with start %d pushes %d: %v", replanned, tc.start, tc.pushes, h.events(from))
			}
		})
	}
}

// TestMoveVariableResult checks the result and events of the entry that
// moves a job, and of the one that moves it back.
func TestMoveVariableResult(t *testing.T) {
	h := newHarness(t, policyConfig)
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	h.must(1000, OK, submitJob("j", "batch", 10, 100, 1100))
	h.must(1000, OK, submitJob("k", "batch", 4, 50, 1000)) // runs now, beside nothing else
	from := h.index + 1
	res := h.must(1060, OK, reserve("r", "batch", 6, 100, withStart(1150)))
	if r := res.GetReservation(); r.GetProbabilityPermille() != 1000 || r.GetRelaxed() {
		t.Fatalf("reservation %v", r)
	}
	if !sameMoves(res.GetMoved(), moves(mv("j", 1100, 1250))) {
		t.Fatalf("moved %v", res.GetMoved())
	}
	evs := h.f.History(from, 0)
	if len(evs) != 3 || evs[0].GetType() != fsmv1.Event_TYPE_COMPLETED || evs[1].GetType() != fsmv1.Event_TYPE_COMMITTED ||
		evs[2].GetType() != fsmv1.Event_TYPE_REPLANNED || evs[2].GetReservation().GetStartMillis() != 1250 || evs[2].GetReservation().GetPushes() != 1 {
		t.Fatalf("events %v", evs)
	}
	// Complete r once it runs: j is pulled back to the log time.
	h.must(1150, OK, tick())
	if h.state("r") != ACTIVE {
		t.Fatalf("r is %s", h.state("r"))
	}
	res = h.must(1170, OK, complete("r", nil))
	if !sameMoves(res.GetMoved(), moves(mv("j", 1250, 1170))) || h.state("r") != COMPLETED || h.state("j") != ACTIVE {
		t.Fatalf("moved %v, r %s, j %s", res.GetMoved(), h.state("r"), h.state("j"))
	}
	if r := h.row("r"); r.GetRequestedDurationMillis() != 100 || r.GetActualEndMillis() != 1170 {
		t.Fatalf("r after completion %v", r)
	}
	if st := h.f.PolicyStats(); st.Pushes != 1 || st.ReleaseSamples != 2 || st.WaitingJobs != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// trainReleases records n completions of alice at half their requested
// time on resource res (one unit, 100 ms each), starting at now.
func trainReleases(h *harness, res string, now int64, n int) int64 {
	for i := range n {
		id := "t" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		h.must(now, OK, reserve(id, res, 1, 100, withStart(now)))
		now += 50
		h.must(now, OK, complete(id, nil))
	}
	return now
}

// TestRelaxed: after 30 completions at half time the estimated
// probability that a running full-capacity reservation has ended 60 % of
// the way in is 30/(30+20 prior) = 0.6. A RELAXED resource with v* = 500
// admits an overlapping reservation with probability 600 ‰; v* = 800 and
// REJECT refuse it. At its start the reservation is ACTIVE when the first
// one has completed, and DEGRADED with the missing units (VIOLATED)
// when it has not.
func TestRelaxed(t *testing.T) {
	cases := []struct {
		name     string
		policy   *fsmv1.PolicySpec
		admitted bool
		endFirst bool // complete a before b's start
		want     fsmv1.Reservation_State
		short    int64
	}{
		{"REJECT refuses", spec(REJECT, 0, 0), false, false, GONE, 0},
		{"v* above the estimate refuses", spec(RELAXED, 800, 0), false, false, GONE, 0},
		{"admitted, first ends in time: ACTIVE", spec(RELAXED, 500, 0), true, true, ACTIVE, 0},
		{"admitted, first still running: DEGRADED", spec(RELAXED, 500, 0), true, false, DEGRADED, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, policyConfig)
			h.must(1000, OK, createPolicyRes("train", 1, spec(RELAXED, 0, 0)))
			h.must(1000, OK, createPolicyRes("gpu", 10, spec(RELAXED, 0, 0)))
			now := trainReleases(h, "train", 1000, 30)
			h.must(now, OK, setPolicy("gpu", tc.policy))
			h.must(now, OK, reserve("a", "gpu", 10, 100, withStart(now)))
			now += 10
			from := h.index + 1
			res := h.apply(now, reserve("b", "gpu", 10, 100, withStart(now+50)))
			if !tc.admitted {
				if res.GetStatus() != REJECTED || h.state("b") != GONE {
					t.Fatalf("status %s (%s), b %s", res.GetStatus(), res.GetMessage(), h.state("b"))
				}
				return
			}
			if res.GetStatus() != OK {
				t.Fatalf("status %s (%s)", res.GetStatus(), res.GetMessage())
			}
			if b := res.GetReservation(); !b.GetRelaxed() || b.GetProbabilityPermille() != 600 {
				t.Fatalf("b admitted as %v", b)
			}
			if tc.endFirst {
				h.must(now+40, OK, complete("a", nil))
			}
			h.must(now+50, OK, tick())
			b := h.row("b")
			if b.GetState() != tc.want || b.GetShortUnits() != tc.short {
				t.Fatalf("b at its start: %s short %d, want %s short %d", b.GetState(), b.GetShortUnits(), tc.want, tc.short)
			}
			violated := slices.Contains(h.events(from), fsmv1.Event_TYPE_VIOLATED)
			st := h.f.PolicyStats()
			if violated != (tc.want == DEGRADED) || st.Violations["gpu"] != map[bool]int64{true: 1}[violated] || st.RelaxedAdmissions != 1 {
				t.Fatalf("violated event %v, stats %+v", violated, st)
			}
			// A degraded reservation runs to its end like an active one.
			h.must(now+149, OK, tick())
			if h.state("b") != tc.want {
				t.Fatalf("b before its end: %s", h.state("b"))
			}
			h.must(now+150, OK, tick())
			if h.state("b") != COMPLETED {
				t.Fatalf("b after its end: %s", h.state("b"))
			}
		})
	}
}

// TestScheduledHoldLifecycle: a relaxed hold violated while held stays
// HELD with its short units and becomes DEGRADED on commit; one that began
// while held is ACTIVE on commit.
func TestScheduledHoldLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endFirst bool
		want     fsmv1.Reservation_State
	}{{"began while held", true, ACTIVE}, {"violated while held", false, DEGRADED}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, policyConfig)
			h.must(1000, OK, createPolicyRes("train", 1, spec(RELAXED, 0, 0)))
			h.must(1000, OK, createPolicyRes("gpu", 10, spec(RELAXED, 500, 0)))
			now := trainReleases(h, "train", 1000, 30)
			h.must(now, OK, reserve("a", "gpu", 10, 100, withStart(now)))
			h.must(now+10, OK, hold("b", "gpu", 10, 100, withStart(now+60), withTTL(500)))
			if tc.endFirst {
				h.must(now+40, OK, complete("a", nil))
			}
			h.must(now+60, OK, tick())
			if b := h.row("b"); b.GetState() != HELD || (b.GetShortUnits() > 0) == tc.endFirst {
				t.Fatalf("b while held: %v", b)
			}
			h.must(now+70, OK, commit("b"))
			if h.state("b") != tc.want {
				t.Fatalf("b committed: %s, want %s", h.state("b"), tc.want)
			}
			checkInvariants(t, h.f)
		})
	}
}

// TestPolicyBadInput: every refusal names the field (or the conflict) and
// changes nothing: the state equals that of a twin that applied a bare
// tick at the same index instead.
func TestPolicyBadInput(t *testing.T) {
	setup := func(t *testing.T) *harness {
		h := newHarness(t, policyConfig)
		h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
		h.must(1000, OK, createPolicyRes("lax", 10, spec(RELAXED, 0, 0)))
		h.must(1000, OK, createRes("cpu", 8))
		h.must(1000, OK, submitJob("j", "batch", 4, 100, 1500))
		h.must(1000, OK, reserve("run", "batch", 2, 100, withStart(1000)))
		h.must(1000, OK, reserve("plain", "cpu", 2, 100, withStart(1200)))
		return h
	}
	withPart := func(p *fsmv1.Part) reqOpt {
		return func(c *fsmv1.Command) { c.GetSubmitJob().Part = p }
	}
	cases := []struct {
		name   string
		cmd    *fsmv1.Command
		status fsmv1.Result_Status
		field  string
		kind   fsmv1.Conflict_Kind
	}{
		{"unknown policy", createPolicyRes("x", 1, spec(99, 0, 0)), INVALID, "create_resource.policy.policy", 0},
		{"v* above 1000", createPolicyRes("x", 1, spec(RELAXED, 1001, 0)), INVALID, "create_resource.policy.min_success_permille", 0},
		{"v* without RELAXED", createPolicyRes("x", 1, spec(MOVE, 900, 0)), INVALID, "create_resource.policy.min_success_permille", 0},
		{"max pushes without MOVE_VARIABLE", setPolicy("cpu", spec(RELAXED, 0, 3)), INVALID, "set_policy.policy.max_pushes", 0},
		{"set policy without a name", setPolicy("", spec(MOVE, 0, 0)), INVALID, "set_policy.name", 0},
		{"set policy of an unknown resource", setPolicy("nope", spec(MOVE, 0, 0)), NOTFOUND, "", 0},
		{"RELAXED over plain reservations", setPolicy("cpu", spec(RELAXED, 0, 0)), CONFLICT, "", fsmv1.Conflict_KIND_IN_USE},
		{"delete a resource with jobs", deleteRes("batch"), CONFLICT, "", fsmv1.Conflict_KIND_IN_USE},
		{"job without a part", submitJob("x", "batch", 1, 10, 0, withPart(nil)), INVALID, "submit_job.part", 0},
		{"job amount 0", submitJob("x", "batch", 0, 10, 0), INVALID, "submit_job.part.amount", 0},
		{"job above capacity", submitJob("x", "batch", 11, 10, 0), INVALID, "submit_job.part.amount", 0},
		{"job without a resource", submitJob("x", "", 1, 10, 0), INVALID, "submit_job.part.resource", 0},
		{"job on an unknown resource", submitJob("x", "nope", 1, 10, 0), NOTFOUND, "", 0},
		{"job duration 0", submitJob("x", "batch", 1, 0, 0), INVALID, "submit_job.duration_millis", 0},
		{"job not_before negative", submitJob("x", "batch", 1, 10, -1), INVALID, "submit_job.not_before_millis", 0},
		{"job with a reserved ID", submitJob("r-1", "batch", 1, 10, 0), INVALID, "submit_job.id", 0},
		{"job with a taken ID", submitJob("plain", "batch", 1, 10, 0), CONFLICT, "", fsmv1.Conflict_KIND_DUPLICATE_ID},
		{"two parts on a policy resource", reserve("x", "batch", 1, 10, withParts(part("batch", 1), part("cpu", 1))), INVALID, "request.parts", 0},
		{"scheduled request amount 0", reserve("x", "lax", 0, 10, withStart(1100)), INVALID, "request.parts[0].amount", 0},
		{"scheduled request duration 0", reserve("x", "lax", 1, 0, withStart(1100)), INVALID, "request.duration_millis", 0},
		{"modify a job", modify("j", nil, proto.Int64(1600), nil), INVALID, "modify.id", 0},
		{"modify onto a RELAXED resource", modify("plain", []*fsmv1.Part{part("lax", 1)}, nil, nil), INVALID, "modify.parts[0].resource", 0},
		{"complete a running scheduled row later", complete("run", proto.Int64(1050)), INVALID, "complete.at_millis", 0},
		{"complete a job that has not started", complete("j", nil), CONFLICT, "", fsmv1.Conflict_KIND_WRONG_STATE},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, twin := setup(t), setup(t)
			res := h.apply(1001, tc.cmd)
			twin.must(1001, OK, tick())
			if res.GetStatus() != tc.status || res.GetInvalid().GetField() != tc.field || res.GetConflict().GetKind() != tc.kind {
				t.Fatalf("%s %q %s (%s), want %s %q %s", res.GetStatus(), res.GetInvalid().GetField(), res.GetConflict().GetKind(),
					res.GetMessage(), tc.status, tc.field, tc.kind)
			}
			if !bytes.Equal(snapshotBytes(t, h.f), snapshotBytes(t, twin.f)) {
				t.Fatal("the refused command changed the state")
			}
		})
	}
}

// TestPolicyChange: SET_POLICY stores the normalised policy on the row and
// emits POLICY_CHANGED; switching away from RELAXED is refused while a
// relaxed admission overbooks the resource; switching to REJECT with
// waiting jobs is allowed.
func TestPolicyChange(t *testing.T) {
	h := newHarness(t, policyConfig)
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	if r, _ := h.f.Resource("batch"); !proto.Equal(r.GetPolicy(), spec(MOVE, 0, 8)) {
		t.Fatalf("stored policy %v", r.GetPolicy())
	}
	h.must(1000, OK, submitJob("j", "batch", 4, 100, 1500))
	from := h.index + 1
	res := h.must(1001, OK, setPolicy("batch", spec(RELAXED, 0, 0)))
	if !proto.Equal(res.GetResource().GetPolicy(), spec(RELAXED, 800, 0)) {
		t.Fatalf("policy after %v", res.GetResource().GetPolicy())
	}
	if evs := h.f.History(from, 0); len(evs) != 1 || evs[0].GetType() != fsmv1.Event_TYPE_POLICY_CHANGED || evs[0].GetResource().GetName() != "batch" {
		t.Fatalf("events %v", evs)
	}
	h.must(1002, OK, setPolicy("batch", nil))
	if r, _ := h.f.Resource("batch"); !proto.Equal(r.GetPolicy(), spec(REJECT, 0, 0)) {
		t.Fatalf("stored policy %v", r.GetPolicy())
	}

	// A relaxed admission that overbooks pins the policy.
	h.must(1003, OK, createPolicyRes("train", 1, spec(RELAXED, 0, 0)))
	h.must(1003, OK, createPolicyRes("gpu", 10, spec(RELAXED, 500, 0)))
	now := trainReleases(h, "train", 1003, 30)
	h.must(now, OK, reserve("a", "gpu", 10, 100, withStart(now)))
	h.must(now, OK, reserve("b", "gpu", 10, 100, withStart(now+60)))
	h.must(now, CONFLICT, setPolicy("gpu", spec(MOVE, 0, 0)))
	h.must(now+40, OK, complete("a", nil)) // b gets the freed capacity
	h.must(now+41, OK, setPolicy("gpu", spec(MOVE, 0, 0)))
}

// TestScheduledSnapshot: a restored replica holds the same scheduler (the
// snapshot re-encodes to the same bytes) and answers the rest of a policy
// workload exactly like the original.
func TestScheduledSnapshot(t *testing.T) {
	h := newHarness(t, propConfig)
	h.must(1000, OK, createPolicyRes("train", 1, spec(RELAXED, 0, 0)))
	h.must(1000, OK, createPolicyRes("gpu", 10, spec(RELAXED, 500, 0)))
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 2)))
	now := trainReleases(h, "train", 1000, 25)
	h.must(now, OK, reserve("a", "gpu", 10, 100, withStart(now), withOwner("bob")))
	h.must(now, OK, reserve("b", "gpu", 10, 100, withStart(now+60)))
	h.must(now, OK, submitJob("j", "batch", 6, 100, now+10))
	h.must(now, OK, submitJob("k", "batch", 6, 100, now+10))
	snap := snapshotBytes(t, h.f)
	g := &harness{t: t, f: restored(t, snap), index: h.index}
	if again := snapshotBytes(t, g.f); !bytes.Equal(snap, again) {
		t.Fatal("snapshot→restore→snapshot changed the bytes")
	}
	checkInvariants(t, g.f)
	rest := []struct {
		now int64
		cmd *fsmv1.Command
	}{
		{now + 5, reserve("r", "batch", 5, 50, withStart(now+20))},
		{now + 20, tick()},
		{now + 30, complete("r", nil)},
		{now + 60, tick()},
		{now + 70, submitJob("", "batch", 3, 10, 0)},
		{now + 200, tick()},
		{now + 400, tick()},
	}
	for _, st := range rest {
		a, b := h.apply(st.now, st.cmd), g.apply(st.now, st.cmd)
		if !proto.Equal(a, b) {
			t.Fatalf("%s at %d: original %v\nrestored %v", st.cmd.GetType(), st.now, a, b)
		}
		checkInvariants(t, g.f)
	}
	if !bytes.Equal(snapshotBytes(t, h.f), snapshotBytes(t, g.f)) {
		t.Fatal("final snapshots differ")
	}
}

// TestJobOnRejectResource: a variable job on a resource without a policy
// waits behind a plain reservation and is pulled forward (and starts at
// once) when that reservation is cancelled.
func TestJobOnRejectResource(t *testing.T) {
	h := newHarness(t, policyConfig)
	h.must(1000, OK, createRes("cpu", 10))
	h.must(1000, OK, reserve("p", "cpu", 10, 100, withStart(1000)))
	if r := h.must(1000, OK, submitJob("j", "cpu", 10, 50, 0)).GetReservation(); r.GetStartMillis() != 1100 || r.GetNotBeforeMillis() != 1000 {
		t.Fatalf("job planned as %v", r)
	}
	h.must(1001, REJECTED, reserve("q", "cpu", 1, 10, withStart(1100))) // REJECT: the job is in the way
	res := h.must(1020, OK, cancel("p"))
	if !sameMoves(res.GetMoved(), moves(mv("j", 1100, 1020))) || h.state("j") != ACTIVE {
		t.Fatalf("moved %v, j %s", res.GetMoved(), h.state("j"))
	}
}

// TestRestoreRejectsBadSchedulerState: snapshots whose scheduler part
// contradicts the table or the planner are refused with ErrBadSnapshot and
// leave the state untouched.
func TestRestoreRejectsBadSchedulerState(t *testing.T) {
	h := newHarness(t, propConfig)
	h.must(1000, OK, createPolicyRes("train", 1, spec(RELAXED, 0, 0)))
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	now := trainReleases(h, "train", 1000, 2)
	h.must(now, OK, submitJob("j", "batch", 4, 100, now+50))
	h.must(now, OK, reserve("r", "batch", 4, 100, withStart(now)))
	good, err := DecodeSnapshot(snapshotBytes(t, h.f))
	if err != nil {
		t.Fatal(err)
	}
	if len(good.GetSchedulerItems()) != 2 || good.GetReleaseModel() == nil {
		t.Fatalf("snapshot without scheduler state: %v", good)
	}
	cases := map[string]func(m *fsmv1.Snapshot){
		"item dropped":         func(m *fsmv1.Snapshot) { m.SchedulerItems = m.SchedulerItems[1:] },
		"item of no row":       func(m *fsmv1.Snapshot) { m.SchedulerItems[0].Id = "ghost" },
		"item repeated":        func(m *fsmv1.Snapshot) { m.SchedulerItems = append(m.SchedulerItems, m.SchedulerItems[0]) },
		"amount differs":       func(m *fsmv1.Snapshot) { m.SchedulerItems[0].Amount++ },
		"running differs":      func(m *fsmv1.Snapshot) { m.SchedulerItems[1].Running = !m.SchedulerItems[1].Running },
		"overbooked too large": func(m *fsmv1.Snapshot) { m.SchedulerItems[0].Overbooked = 99 },
		"bucket out of range":  func(m *fsmv1.Snapshot) { m.ReleaseModel.Global[0].Permille = 1001 },
		"owners unsorted": func(m *fsmv1.Snapshot) {
			m.ReleaseModel.Owners = append(m.ReleaseModel.Owners, &fsmv1.OwnerRatios{Owner: "a"})
		},
		"bad policy on a row": func(m *fsmv1.Snapshot) { m.Resources[0].Policy = spec(MOVE, 2000, 0) },
	}
	before := snapshotBytes(t, h.f)
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := proto.CloneOf(good)
			mutate(m)
			b, err := EncodeSnapshot(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.f.Restore(io.NopCloser(bytes.NewReader(b))); !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("restore: %v, want ErrBadSnapshot", err)
			}
			if !bytes.Equal(snapshotBytes(t, h.f), before) {
				t.Fatal("failed restore changed the state")
			}
		})
	}
}

// TestNextDueAndPolicyStats: NextDue names the earliest table timer or
// scheduler event; PolicyStats counts waiting and pinned jobs and pushes.
func TestNextDueAndPolicyStats(t *testing.T) {
	h := newHarness(t, policyConfig)
	if _, ok := h.f.NextDue(); ok {
		t.Fatal("empty state has due work")
	}
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 1)))
	h.must(1000, OK, hold("h", "batch", 1, 500, withStart(3000), withTTL(900)))
	if at, ok := h.f.NextDue(); !ok || at != 1900 {
		t.Fatalf("next due %d %v, want the hold expiry 1900", at, ok)
	}
	h.must(1000, OK, submitJob("j", "batch", 10, 100, 1100))
	if at, ok := h.f.NextDue(); !ok || at != 1100 {
		t.Fatalf("next due %d %v, want the job start 1100", at, ok)
	}
	h.must(1001, OK, reserve("r", "batch", 5, 100, withStart(1150)))
	st := h.f.PolicyStats()
	if st.WaitingJobs != 1 || st.PinnedJobs != 1 || st.Pushes != 1 || st.RelaxedAdmissions != 0 {
		t.Fatalf("stats %+v", st)
	}
	if at, ok := h.f.NextDue(); !ok || at != 1150 {
		t.Fatalf("next due %d %v, want the reservation start 1150", at, ok)
	}
	h.must(1150, OK, tick())
	if at, ok := h.f.NextDue(); !ok || at != 1250 {
		t.Fatalf("next due %d %v, want r's end and j's start 1250", at, ok)
	}
	h.must(1250, OK, tick())
	if st := h.f.PolicyStats(); st.WaitingJobs != 0 || st.PinnedJobs != 0 || h.state("j") != ACTIVE {
		t.Fatalf("after j started: %+v, j %s", st, h.state("j"))
	}
}
