package fsm

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

const (
	PENDING = fsmv1.Reservation_STATE_PENDING_APPROVAL
	SDENIED = fsmv1.Reservation_STATE_DENIED
	LIMITED = fsmv1.Result_STATUS_LIMIT_EXCEEDED
)

func setLimits(tenant, resource string, sp *fsmv1.LimitSpec) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_SET_LIMITS, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_SetLimits{SetLimits: &fsmv1.SetLimits{Tenant: tenant, Resource: resource, Spec: sp}}}
}

func decide(approve bool, id, reason string) *fsmv1.Command {
	typ := fsmv1.Command_TYPE_DENY
	if approve {
		typ = fsmv1.Command_TYPE_APPROVE
	}
	return &fsmv1.Command{Type: typ, Owner: "op", Privileged: true,
		Payload: &fsmv1.Command_Decision{Decision: &fsmv1.Decision{Id: id, Reason: reason}}}
}

// TestLimitsRefusal: each limit refuses with its name, the usage and what
// would fit, and changes nothing.
func TestLimitsRefusal(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createRes("cpu", 100))
	h.must(1000, OK, setLimits("alice", "cpu", &fsmv1.LimitSpec{MaxUnits: 10, MaxUnitMillis: 3000, WindowMillis: 1000,
		MaxDurationMillis: 500, MaxAheadMillis: 100_000, MaxHoldTtlMillis: 5_000}))
	h.must(1000, OK, reserve("a1", "cpu", 6, 400, withStart(2000)))
	for _, tc := range []struct {
		name         string
		cmd          *fsmv1.Command
		limit        string
		use, fits    int64
		wantInReason string
	}{
		{"units", reserve("x", "cpu", 5, 100, withStart(2100)), "max_units", 6, 4, "usage 6 units + request 5 units; 4 would fit"},
		// a1 books 2400 unit-ms; [1700, 2700) holds it all, and 3 more
		// units for 300 ms is 900 > 600 left.
		{"window", reserve("x", "cpu", 3, 300, withStart(2400)), "max_unit_millis", 2400, 2, ""},
		{"duration", reserve("x", "cpu", 1, 600, withStart(5000)), "max_duration_millis", 0, 500, "request 600 ms; at most 500 fits"},
		{"horizon", reserve("x", "cpu", 1, 100, withStart(200_000)), "max_ahead_millis", 0, 100_000, ""},
		{"hold ttl", hold("x", "cpu", 1, 100, withStart(5000), withTTL(6_000)), "max_hold_ttl_millis", 0, 5_000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.f.st.resv.len()
			res := h.must(1000, LIMITED, tc.cmd)
			le := res.GetLimitExceeded()
			if le.GetLimit() != tc.limit || le.GetUsage() != tc.use || le.GetFits() != tc.fits || le.GetOver() ||
				le.GetTenant() != "alice" || le.GetEntryResource() != "cpu" {
				t.Fatalf("%s: %v (%s)", tc.name, le, res.GetMessage())
			}
			if !strings.Contains(res.GetMessage(), tc.wantInReason) {
				t.Errorf("message %q lacks %q", res.GetMessage(), tc.wantInReason)
			}
			if h.f.st.resv.len() != before || h.f.st.plan.Len() != 1 {
				t.Fatal("a refused request changed the table or the planner")
			}
		})
	}
	// What fits does fit.
	h.must(1000, OK, reserve("fit", "cpu", 4, 100, withStart(2100)))
	// A hold asking for no TTL gets min(default, max_hold_ttl).
	r := h.must(1000, OK, hold("h", "cpu", 1, 100, withStart(50_000))).GetReservation()
	if r.GetHoldExpiresMillis() != 1000+5_000 {
		t.Errorf("hold expires at %d, want 6000", r.GetHoldExpiresMillis())
	}
	// bob is not limited.
	h.must(1000, OK, reserve("b", "cpu", 50, 100, withStart(2000), withOwner("bob")))
}

// TestLimitLoweredRefusesOnlyNewBookings: lowering a limit below the usage
// keeps every booking; the next request is refused with over set.
func TestLimitLoweredRefusesOnlyNewBookings(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createRes("cpu", 100))
	h.must(1000, OK, setLimits("*", "*", &fsmv1.LimitSpec{MaxUnits: 20}))
	h.must(1000, OK, reserve("a", "cpu", 15, 1000, withStart(2000)))
	h.must(1000, OK, hold("b", "cpu", 5, 1000, withStart(2500), withTTL(10_000)))
	h.must(1000, OK, setLimits("alice", "cpu", &fsmv1.LimitSpec{MaxUnits: 10}))
	if h.state("a") != COMMITTED || h.state("b") != HELD {
		t.Fatal("lowering a limit changed a booking")
	}
	res := h.must(1000, LIMITED, reserve("c", "cpu", 1, 100, withStart(2600)))
	if le := res.GetLimitExceeded(); !le.GetOver() || le.GetUsage() != 20 || le.GetFits() != 0 || le.GetEntryTenant() != "alice" {
		t.Fatalf("%v", le)
	}
	if !strings.Contains(res.GetMessage(), "already over the limit") {
		t.Errorf("message %q", res.GetMessage())
	}
	// Outside the booked interval there is room; commit of the hold is
	// not a new booking.
	h.must(1000, OK, reserve("d", "cpu", 10, 100, withStart(4000)))
	h.must(1100, OK, commit("b"))
	// Clearing the entry falls back to the default (20 units).
	h.must(1100, OK, setLimits("alice", "cpu", nil))
	h.must(1100, LIMITED, reserve("e", "cpu", 1, 100, withStart(2600)))
	h.must(1100, OK, setLimits("*", "*", nil))
	if h.f.st.lim.limited() {
		t.Fatal("usage still tracked without limits")
	}
	h.must(1100, OK, reserve("e", "cpu", 1, 100, withStart(2600)))
	checkInvariants(t, h.f)
}

// TestApprovalLifecycle: approve, deny, abort by the owner and expiry of a
// PENDING_APPROVAL request; its capacity is held throughout and given
// back by everything but approval.
func TestApprovalLifecycle(t *testing.T) {
	h := newHarness(t, Config{HistoryLimit: 1000})
	h.must(1000, OK, createRes("gpu", 8))
	h.must(1000, OK, setLimits("*", "gpu", &fsmv1.LimitSpec{ApprovalAboveUnits: 4, ApprovalTtlMillis: 5_000}))
	small := h.must(1000, OK, reserve("small", "gpu", 2, 100, withStart(10_000))).GetReservation()
	if small.GetState() != COMMITTED {
		t.Fatalf("below the threshold: %v", small.GetState())
	}
	for _, id := range []string{"p1", "p2", "p3"} {
		h.must(1000, OK, reserve(id, "gpu", 6, 100, withStart(int64(20_000+10_000*len(id)+int(id[1]-'0')*1000))))
	}
	r, _ := h.f.Get("p1")
	if r.GetState() != PENDING || r.GetHoldExpiresMillis() != 6000 || !strings.Contains(r.GetApprovalReason(), "above the approval threshold 4") {
		t.Fatalf("p1: %v", r)
	}
	// Its capacity is held: nobody else gets it.
	h.must(1000, REJECTED, reserve("other", "gpu", 3, 100, withStart(r.GetStartMillis()), withOwner("bob")))
	// Only operators decide; the owner cannot commit it.
	h.must(1000, fsmv1.Result_STATUS_PERMISSION_DENIED, &fsmv1.Command{Type: fsmv1.Command_TYPE_APPROVE, Owner: "alice",
		Payload: &fsmv1.Command_Decision{Decision: &fsmv1.Decision{Id: "p1"}}})
	h.must(1000, CONFLICT, commit("p1"))
	h.must(1000, INVALID, decide(false, "p1", ""))

	h.must(1100, OK, decide(true, "p1", "fine"))
	h.must(1100, CONFLICT, decide(false, "p1", "too late"))
	h.must(1200, OK, decide(false, "p2", "not this week"))
	h.must(1300, OK, abort("p3"))
	got := map[string]fsmv1.Reservation_State{"p1": h.state("p1"), "p2": h.state("p2"), "p3": h.state("p3")}
	want := map[string]fsmv1.Reservation_State{"p1": COMMITTED, "p2": SDENIED, "p3": ABORTED}
	if !maps.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	if r, _ := h.f.Get("p2"); r.GetDecisionReason() != "not this week" {
		t.Errorf("p2 reason %q", r.GetDecisionReason())
	}
	// Denial and abort gave the capacity back.
	p2, _ := h.f.Get("p2")
	h.must(1300, OK, reserve("other", "gpu", 3, 100, withStart(p2.GetStartMillis()), withOwner("bob")))

	// Expiry: unanswered until its TTL, by the ordinary tick.
	h.must(2000, OK, reserve("p4", "gpu", 5, 100, withStart(40_000)))
	h.must(6999, OK, tick())
	if h.state("p4") != PENDING {
		t.Fatal("expired early")
	}
	if due, ok := h.f.NextDue(); !ok || due != 7000 {
		t.Fatalf("next due %d %v, want 7000 (the pending request's expiry)", due, ok)
	}
	if res := h.must(7000, OK, tick()); res.GetExpired() != 1 || h.state("p4") != EXPIRED {
		t.Fatalf("tick at the expiry: expired %d, state %s", res.GetExpired(), h.state("p4"))
	}
	h.must(7000, OK, reserve("after", "gpu", 4, 100, withStart(40_000), withOwner("bob")))

	var kinds []string
	for _, e := range h.f.History(0, 0) {
		if id := e.GetReservation().GetId(); strings.HasPrefix(id, "p") {
			kinds = append(kinds, id+":"+strings.TrimPrefix(e.GetType().String(), "TYPE_"))
		}
	}
	wantEvents := "p1:APPROVAL_REQUESTED p2:APPROVAL_REQUESTED p3:APPROVAL_REQUESTED p1:APPROVED p2:DENIED p3:ABORTED p4:APPROVAL_REQUESTED p4:EXPIRED"
	if strings.Join(kinds, " ") != wantEvents {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(kinds, " "), wantEvents)
	}
	checkInvariants(t, h.f)
}

// TestApprovalOnScheduledResourceRefused: a MOVE_VARIABLE resource cannot
// hold a request for approval.
func TestApprovalOnScheduledResourceRefused(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	h.must(1000, OK, setLimits("*", "*", &fsmv1.LimitSpec{ApprovalRequired: true}))
	res := h.must(1000, CONFLICT, reserve("x", "batch", 1, 100, withStart(2000)))
	if res.GetConflict().GetKind() != fsmv1.Conflict_KIND_APPROVAL_UNSUPPORTED {
		t.Fatalf("%v", res)
	}
}

// TestModifyLimits: the new shape of a modification is checked beside the
// current one (counted once where they overlap).
func TestModifyLimits(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createRes("cpu", 100))
	h.must(1000, OK, setLimits("alice", "cpu", &fsmv1.LimitSpec{MaxUnits: 10}))
	h.must(1000, OK, reserve("a", "cpu", 8, 1000, withStart(2000)))
	// Growing to 10 over the same interval fits (the old 8 are not counted twice).
	h.must(1000, OK, modify("a", []*fsmv1.Part{part("cpu", 10)}, nil, nil))
	h.must(1000, OK, abort("a"))
	res := h.must(1000, LIMITED, modify("a", []*fsmv1.Part{part("cpu", 11)}, nil, nil))
	if le := res.GetLimitExceeded(); le.GetLimit() != "max_units" {
		t.Fatalf("%v", le)
	}
	// Moving it by half: the tenant ends up with one shape or the other,
	// so the overlap counts 8 once, not twice.
	h.must(1000, OK, modify("a", nil, proto.Int64(2500), nil))
	h.must(1000, OK, abort("a"))
	// Another reservation beside it: 8 + 3 > 10 where the new shape
	// reaches past the old one.
	h.must(1000, OK, reserve("b", "cpu", 3, 500, withStart(3000)))
	h.must(1000, LIMITED, modify("a", nil, proto.Int64(2500), nil))
	checkInvariants(t, h.f)
}

// TestLimitsSnapshotRoundTrip: limits and usage survive a snapshot, and a
// restored replica decides like the original.
func TestLimitsSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createRes("cpu", 100))
	h.must(1000, OK, setLimits("alice", "*", &fsmv1.LimitSpec{MaxUnits: 10, ApprovalAboveUnits: 6}))
	h.must(1000, OK, reserve("a", "cpu", 7, 1000, withStart(2000)))
	snap := snapshotBytes(t, h.f)
	g := restored(t, snap)
	checkInvariants(t, g)
	if r, _ := g.Get("a"); r.GetState() != PENDING {
		t.Fatalf("restored a: %v", r.GetState())
	}
	h2 := &harness{t: t, f: g, index: h.index}
	for _, x := range []*harness{h, h2} {
		x.must(1000, LIMITED, reserve("b", "cpu", 4, 100, withStart(2100)))
		x.must(1000, OK, reserve("b", "cpu", 3, 100, withStart(2100)))
	}
	if a, b := snapshotBytes(t, h.f), snapshotBytes(t, g); string(a) != string(b) {
		t.Fatal("restored replica diverged")
	}
}

// refLimits is the reference's limit table, kept from the accepted
// SET_LIMITS commands.
type refLimits map[limitKey]*fsmv1.LimitSpec

func (l refLimits) lookup(tenant, res string) *fsmv1.LimitSpec {
	for _, k := range []limitKey{{tenant, res}, {tenant, "*"}, {"*", res}, {"*", "*"}} {
		if sp, ok := l[k]; ok {
			return sp
		}
	}
	return nil
}

// refTenantUsage is the usage of tenant on res from the rows alone.
func refTenantUsage(rows map[string]*fsmv1.Reservation, tenant, res string) refUsage {
	var u refUsage
	for _, r := range rows {
		if r.GetOwner() == tenant {
			u = append(u, refContribution(r, res)...)
		}
	}
	return u
}

// refBreaks reports whether usage u breaks sp at some instant of [s, e)
// or in some window overlapping it.
func refBreaks(u refUsage, sp *fsmv1.LimitSpec, s, e int64) bool {
	return refBreaksWhere(u, refUsage{{s, e, 1}}, sp)
}

// refBreaksWhere reports whether usage u breaks sp at some instant where
// delta is positive, or in some window where delta's unit-time is.
func refBreaksWhere(u, delta refUsage, sp *fsmv1.LimitSpec) bool {
	s, e := span(delta)
	if mx := sp.GetMaxUnits(); mx > 0 {
		for t := s; t < e; t++ {
			if delta.level(t) > 0 && u.level(t) > mx {
				return true
			}
		}
	}
	if mx, w := sp.GetMaxUnitMillis(), sp.GetWindowMillis(); mx > 0 {
		for x := s - w + 1; x < e; x++ {
			if delta.windowSum(x, w) > 0 && u.windowSum(x, w) > mx {
				return true
			}
		}
	}
	return false
}

// refDelta is what a row's pending modification adds to its tenant's
// usage on res (positive and negative pieces), or the row itself when it
// has none.
func refDelta(r *fsmv1.Reservation, res string) refUsage {
	with := refContribution(r, res)
	if r.GetPending() == nil {
		return with
	}
	old := proto.CloneOf(r)
	old.Pending = nil
	for _, x := range refContribution(old, res) {
		with = append(with, rect{x.s, x.e, -x.a})
	}
	return with
}

// TestLimitsProperty runs random streams of bookings, limit changes and
// decisions against the reference model: every booking admitted leaves
// its tenant within the limits in force wherever it lies; every refusal
// by max_units/max_unit_millis of an exact-start request is one the
// reference also sees, changes nothing, and says over exactly when the
// usage alone breaks the limit; setting limits never changes a row;
// pending requests keep their capacity (checkInvariants: booked in the
// planner, nothing overbooked) until a decision or expiry frees it.
func TestLimitsProperty(t *testing.T) {
	ss := seeds()
	if *propSeed == 0 && !testing.Short() {
		// The reference checks every step by brute force: a few seeds
		// by default, more with -fsm.seeds.
		ss = ss[:min(len(ss), max(4, *propSeeds/3))]
	}
	for _, seed := range ss {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay with -fsm.seed=%d", seed)
			rng := rand.New(rand.NewPCG(seed, 0x11a175))
			h := newHarness(t, Config{DefaultHoldTTL: 200, MaxHoldTTL: 2000, Retention: 500, HistoryLimit: 100})
			h.must(1000, OK, createRes("cpu", 30))
			h.must(1000, OK, createRes("gpu", 8))
			lim := refLimits{}
			now := int64(1000)
			var ids []string
			pick := func() string {
				if len(ids) == 0 || rng.IntN(6) == 0 {
					return "none"
				}
				return ids[len(ids)-1-rng.IntN(min(len(ids), 8))]
			}
			stats := map[string]int{}
			var pending []string
			for step := range *propSteps {
				now += int64(rng.IntN(30))
				h.must(now, OK, tick()) // time's work first, so the command alone changes the rows
				tenant := []string{"alice", "bob"}[rng.IntN(2)]
				res := []string{"cpu", "cpu", "gpu"}[rng.IntN(3)]
				var cmd *fsmv1.Command
				switch k := rng.IntN(100); {
				case k < 8:
					var sp *fsmv1.LimitSpec
					if rng.IntN(4) > 0 {
						sp = &fsmv1.LimitSpec{}
						if rng.IntN(2) == 0 {
							sp.MaxUnits = int64(3 + rng.IntN(15))
						}
						if rng.IntN(2) == 0 {
							sp.MaxUnitMillis, sp.WindowMillis = int64(200+rng.IntN(3000)), int64(50+rng.IntN(300))
						}
						if rng.IntN(2) == 0 {
							sp.ApprovalAboveUnits, sp.ApprovalTtlMillis = int64(3+rng.IntN(4)), int64(50+rng.IntN(300))
						}
					}
					cmd = setLimits([]string{"alice", "bob", "*"}[rng.IntN(3)], []string{"cpu", "gpu", "*"}[rng.IntN(3)], sp)
				case k < 50:
					opts := []reqOpt{withOwner(tenant), withTTL(int64(rng.IntN(400)))}
					if rng.IntN(3) > 0 {
						opts = append(opts, withStart(now+int64(rng.IntN(600))))
					} else {
						nb := now + int64(rng.IntN(400))
						opts = append(opts, withWindow(nb, nb+int64(200+rng.IntN(800))))
					}
					mk := hold
					if rng.IntN(2) == 0 {
						mk = reserve
					}
					cmd = mk("", res, int64(1+rng.IntN(7)), int64(10+rng.IntN(150)), opts...)
				case k < 60:
					cmd = commit(pick(), withOwner(tenant))
				case k < 66:
					cmd = abort(pick(), withOwner(tenant))
				case k < 72:
					cmd = cancel(pick(), withOwner(tenant))
				case k < 84:
					var ps []*fsmv1.Part
					if rng.IntN(2) == 0 {
						ps = []*fsmv1.Part{part(res, int64(1+rng.IntN(7)))}
					}
					m := modify(pick(), ps, proto.Int64(now+1+int64(rng.IntN(500))), nil)
					m.Owner = tenant
					cmd = m
				case k < 94:
					id := pick()
					if len(pending) > 0 && rng.IntN(4) > 0 {
						id = pending[rng.IntN(len(pending))]
					}
					cmd = decide(rng.IntN(2) == 0, id, "r")
				default:
					cmd = complete(pick(), nil, withOwner(tenant))
				}
				var rowsBefore map[string]string
				func() {
					h.f.mu.RLock()
					defer h.f.mu.RUnlock()
					rowsBefore = maps.Collect(h.f.st.resv.all())
				}()
				r := h.apply(now, cmd)
				if r.GetStatus() == OK && cmd.GetType() == fsmv1.Command_TYPE_SET_LIMITS {
					sl := cmd.GetSetLimits()
					if sl.GetSpec() == nil {
						delete(lim, limitKey{sl.GetTenant(), sl.GetResource()})
					} else {
						lim[limitKey{sl.GetTenant(), sl.GetResource()}] = sl.GetSpec()
					}
				}
				var rows map[string]*fsmv1.Reservation
				var rowsAfter map[string]string
				func() {
					h.f.mu.RLock()
					defer h.f.mu.RUnlock()
					rows = allRows(t, h.f.st)
					rowsAfter = maps.Collect(h.f.st.resv.all())
				}()
				stats[cmd.GetType().String()+"/"+r.GetStatus().String()]++
				switch {
				case cmd.GetType() == fsmv1.Command_TYPE_SET_LIMITS || r.GetStatus() == LIMITED:
					if !maps.Equal(rowsBefore, rowsAfter) {
						t.Fatalf("step %d: %s (%s) changed rows", step, cmd.GetType(), r.GetStatus())
					}
				}
				if r.GetStatus() == LIMITED {
					le := r.GetLimitExceeded()
					req := cmd.GetRequest()
					if req != nil && req.StartMillis != nil && (le.GetLimit() == "max_units" || le.GetLimit() == "max_unit_millis") {
						s := req.GetStartMillis()
						e := s + req.GetDurationMillis()
						u := refTenantUsage(rows, le.GetTenant(), le.GetResource())
						sp := lim.lookup(le.GetTenant(), le.GetResource())
						with := append(u[:len(u):len(u)], rect{s, e, req.GetParts()[0].GetAmount()})
						if !refBreaks(with, sp, s, e) {
							t.Fatalf("step %d: refused %v by %v, but the reference fits it", step, cmd, le)
						}
						if le.GetLimit() == "max_units" && le.GetOver() != refBreaks(u, &fsmv1.LimitSpec{MaxUnits: sp.GetMaxUnits()}, s, e) {
							t.Fatalf("step %d: over = %v for %v", step, le.GetOver(), le)
						}
					}
				}
				if r.GetStatus() == OK {
					if nr := r.GetReservation(); nr != nil && countsState(nr.GetState()) {
						ids = append(ids, nr.GetId())
						if nr.GetState() == PENDING {
							pending = append(pending, nr.GetId())
						}
						parts := nr.GetParts()
						fresh := nr.GetCreatedVersion() == h.index
						if p := nr.GetPending(); p != nil && p.GetVersion() == h.index {
							parts, fresh = p.GetParts(), true
						}
						if fresh {
							for _, p := range parts {
								sp := lim.lookup(nr.GetOwner(), p.GetResource())
								u := refTenantUsage(rows, nr.GetOwner(), p.GetResource())
								if refBreaksWhere(u, refDelta(nr, p.GetResource()), sp) {
									t.Fatalf("step %d: %v admitted %v, which breaks %v of %s on %s", step, cmd, nr, sp, nr.GetOwner(), p.GetResource())
								}
							}
						}
					}
				}
				checkInvariants(t, h.f)
			}
			t.Logf("outcomes %v", stats)
			for _, want := range []string{"TYPE_HOLD/STATUS_LIMIT_EXCEEDED", "TYPE_MODIFY/STATUS_OK", "TYPE_APPROVE/STATUS_OK", "TYPE_DENY/STATUS_OK"} {
				if stats[want] == 0 && seed == 1 && *propSteps >= 250 {
					t.Errorf("the stream never reached %s", want)
				}
			}
		})
	}
}

// TestSubmitJobRequestLimits: a variable job gets the limits of the
// request itself (its start moves, so usage limits do not apply to it).
func TestSubmitJobRequestLimits(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	h.must(1000, OK, setLimits("alice", "batch", &fsmv1.LimitSpec{MaxDurationMillis: 500, MaxAheadMillis: 10_000}))
	job := func(dur, nb int64) *fsmv1.Command {
		return &fsmv1.Command{Type: fsmv1.Command_TYPE_SUBMIT_JOB, Owner: "alice", Payload: &fsmv1.Command_SubmitJob{SubmitJob: &fsmv1.SubmitJob{
			Part: part("batch", 2), DurationMillis: dur, NotBeforeMillis: nb}}}
	}
	if le := h.must(1000, LIMITED, job(600, 0)).GetLimitExceeded(); le.GetLimit() != "max_duration_millis" || le.GetFits() != 500 {
		t.Fatalf("%v", le)
	}
	if le := h.must(1000, LIMITED, job(100, 20_000)).GetLimitExceeded(); le.GetLimit() != "max_ahead_millis" {
		t.Fatalf("%v", le)
	}
	h.must(1000, OK, job(500, 2000))
}

// TestCoReserveLimits: a co-reservation is refused when all its
// sub-requests on one candidate would break that candidate's limit.
func TestCoReserveLimits(t *testing.T) {
	h := newHarness(t, Config{})
	h.must(1000, OK, createRes("a", 100))
	h.must(1000, OK, createRes("b", 100))
	h.must(1000, OK, setLimits("alice", "*", &fsmv1.LimitSpec{MaxUnits: 10}))
	co := func(id string, amounts ...int64) *fsmv1.Command {
		c := &fsmv1.CoReserve{Id: id, Candidates: []string{"a", "b"}}
		for _, n := range amounts {
			c.Subs = append(c.Subs, &fsmv1.CoSub{Amount: n, StartMillis: 5000, DurationMillis: 100})
		}
		return &fsmv1.Command{Type: fsmv1.Command_TYPE_CO_RESERVE, Owner: "alice", Payload: &fsmv1.Command_CoReserve{CoReserve: c}}
	}
	if le := h.must(1000, LIMITED, co("x", 6, 6)).GetLimitExceeded(); le.GetLimit() != "max_units" || le.GetResource() != "a" {
		t.Fatalf("%v", le)
	}
	h.must(1000, OK, co("y", 5, 5))
	checkInvariants(t, h.f)
}
