package fsm

import (
	"math"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

func coReserve(id string, minJoint uint32, cands []string, subs ...*fsmv1.CoSub) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CO_RESERVE, Owner: "alice", Payload: &fsmv1.Command_CoReserve{CoReserve: &fsmv1.CoReserve{
		Id: id, Subs: subs, Candidates: cands, MinJointPermille: minJoint,
	}}}
}

func coSub(amount, start, dur int64) *fsmv1.CoSub {
	return &fsmv1.CoSub{Amount: amount, StartMillis: start, DurationMillis: dur}
}

// coFixture: REJECT resources x and y (10 units; x is full over
// [now, now+100) with plain reservation p) and RELAXED gpu (10 units,
// v* = 500) carrying a, a full-capacity reservation of alice over
// [now, now+100) whose estimated probability of having ended 60 ms in is
// 600 ‰ (trainReleases). It returns the log time.
func coFixture(h *harness) int64 {
	h.must(1000, OK, createPolicyRes("train", 1, spec(RELAXED, 0, 0)))
	h.must(1000, OK, createPolicyRes("gpu", 10, spec(RELAXED, 500, 0)))
	now := trainReleases(h, "train", 1000, 30)
	h.must(now, OK, createRes("x", 10))
	h.must(now, OK, createRes("y", 10))
	h.must(now, OK, reserve("p", "x", 10, 100, withStart(now)))
	h.must(now, OK, reserve("a", "gpu", 10, 100, withStart(now)))
	return now
}

// TestCoReserve: a rigid mapping is taken when one exists (first fitting
// candidate per sub-request), a relaxed one with its joint probability
// only when none does, and a joint probability below min_joint refuses
// the whole request and books nothing.
func TestCoReserve(t *testing.T) {
	type want struct {
		status  fsmv1.Result_Status
		mapping []string
		probs   []uint32
		joint   uint32
		relaxed []bool
	}
	cases := []struct {
		name  string
		cands []string
		subs  func(now int64) []*fsmv1.CoSub
		min   uint32
		want  want
	}{
		{"rigid: full x skipped, later sub back on x", []string{"x", "y", "gpu"}, func(now int64) []*fsmv1.CoSub {
			return []*fsmv1.CoSub{coSub(5, now+10, 50), coSub(5, now+200, 50)}
		}, 1000, want{OK, []string{"y", "x"}, []uint32{1000, 1000}, 1000, []bool{false, false}}},
		{"rigid fit on a later candidate beats relaxed on an earlier one", []string{"gpu", "y"}, func(now int64) []*fsmv1.CoSub {
			return []*fsmv1.CoSub{coSub(10, now+60, 100)}
		}, 0, want{OK, []string{"y"}, []uint32{1000}, 1000, []bool{false}}},
		{"relaxed only where nothing fits rigidly", []string{"x", "gpu", "y"}, func(now int64) []*fsmv1.CoSub {
			return []*fsmv1.CoSub{coSub(10, now+10, 100), coSub(10, now+60, 100)}
		}, 500, want{OK, []string{"y", "gpu"}, []uint32{1000, 600}, 600, []bool{false, true}}},
		{"joint below min_joint refuses all", []string{"x", "gpu", "y"}, func(now int64) []*fsmv1.CoSub {
			return []*fsmv1.CoSub{coSub(10, now+10, 100), coSub(10, now+60, 100)}
		}, 700, want{status: REJECTED}},
		{"a sub-request that fits nowhere refuses all", []string{"y", "x"}, func(now int64) []*fsmv1.CoSub {
			return []*fsmv1.CoSub{coSub(5, now+10, 50), coSub(11, now+10, 50)}
		}, 0, want{status: REJECTED}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, policyConfig)
			now := coFixture(h)
			stats := h.f.PolicyStats()
			subs := tc.subs(now)
			res := h.must(now, tc.want.status, coReserve("c", tc.min, tc.cands, subs...))
			checkInvariants(t, h.f)
			if tc.want.status != OK {
				for i := range subs {
					if st := h.state(coSubID("c", i)); st != GONE {
						t.Fatalf("refused co-reservation left %s in %s", coSubID("c", i), st)
					}
				}
				if res.GetCoAdmission() != nil || h.f.PolicyStats().RelaxedAdmissions != stats.RelaxedAdmissions {
					t.Fatalf("refusal carries %v, stats %+v", res.GetCoAdmission(), h.f.PolicyStats())
				}
				return
			}
			ca := res.GetCoAdmission()
			if ca.GetJointPermille() != tc.want.joint || len(ca.GetPlacements()) != len(tc.want.mapping) {
				t.Fatalf("admission %v, want mapping %v joint %d", ca, tc.want.mapping, tc.want.joint)
			}
			for i, p := range ca.GetPlacements() {
				r := p.GetReservation()
				if p.GetResource() != tc.want.mapping[i] || p.GetProbabilityPermille() != tc.want.probs[i] ||
					r.GetId() != coSubID("c", i) || r.GetState() != COMMITTED || r.GetOwner() != "alice" ||
					r.GetParts()[0].GetResource() != p.GetResource() || r.GetParts()[0].GetAmount() != subs[i].GetAmount() ||
					r.GetStartMillis() != subs[i].GetStartMillis() || r.GetEndMillis() != subs[i].GetStartMillis()+subs[i].GetDurationMillis() ||
					r.GetProbabilityPermille() != tc.want.probs[i] || r.GetRelaxed() != tc.want.relaxed[i] {
					t.Fatalf("placement %d: %v, want %s %d relaxed %v", i, p, tc.want.mapping[i], tc.want.probs[i], tc.want.relaxed[i])
				}
				if !scheduled(h.row(r.GetId())) {
					t.Fatalf("%s is not a scheduled row", r.GetId())
				}
			}
			nRelaxed := int64(0)
			for _, r := range tc.want.relaxed {
				if r {
					nRelaxed++
				}
			}
			if got := h.f.PolicyStats().RelaxedAdmissions - stats.RelaxedAdmissions; got != nRelaxed {
				t.Fatalf("relaxed admissions +%d, want %d", got, nRelaxed)
			}
		})
	}
}

// TestCoReserveLifecycle: each sub-reservation lives on by itself:
// cancelling one frees its capacity and leaves the other, which starts
// and completes by log time.
func TestCoReserveLifecycle(t *testing.T) {
	h := newHarness(t, policyConfig)
	now := coFixture(h)
	h.must(now, OK, coReserve("c", 0, []string{"y"}, coSub(6, now+10, 50), coSub(4, now+10, 50)))
	h.must(now, REJECTED, reserve("q", "y", 1, 50, withStart(now+10)))
	h.run([]step{
		{now + 1, cancel("c/1"), OK, "c/1", CANCELLED},
		{now + 2, reserve("q", "y", 4, 50, withStart(now+10)), OK, "q", COMMITTED},
		{now + 10, tick(), OK, "c/0", ACTIVE},
		{now + 60, tick(), OK, "c/0", COMPLETED},
	})
	// The IDs of a refused or finished request stay taken while the rows
	// are kept.
	h.must(now+61, CONFLICT, coReserve("c", 0, []string{"y"}, coSub(1, now+100, 10)))
}

// TestCoReserveInvalid: bad input names the field and books nothing.
func TestCoReserveInvalid(t *testing.T) {
	h := newHarness(t, policyConfig)
	now := coFixture(h)
	ok := []*fsmv1.CoSub{coSub(1, now+10, 10)}
	cases := []struct {
		cmd   *fsmv1.Command
		field string
	}{
		{coReserve("c/0", 0, []string{"y"}, ok...), "co_reserve.id"},
		{coReserve(strings.Repeat("i", 127), 0, []string{"y"}, ok...), "co_reserve.id"},
		{coReserve("c", 0, []string{"y"}), "co_reserve.subs"},
		{coReserve("c", 0, nil, ok...), "co_reserve.candidates"},
		{coReserve("c", 1001, []string{"y"}, ok...), "co_reserve.min_joint_permille"},
		{coReserve("c", 0, []string{"y", "nope"}, ok...), "co_reserve.candidates[1]"},
		{coReserve("c", 0, []string{"y", "y"}, ok...), "co_reserve.candidates[1]"},
		{coReserve("c", 0, []string{"y"}, coSub(1, now+10, 10), coSub(0, now+10, 10)), "co_reserve.subs[1].amount"},
		{coReserve("c", 0, []string{"y"}, coSub(1, now+10, 0)), "co_reserve.subs[0].duration_millis"},
		{coReserve("c", 0, []string{"y"}, coSub(1, now-1, 10)), "co_reserve.subs[0].start_millis"},
		{coReserve("c", 0, []string{"y"}, coSub(1, now+1, math.MaxInt64)), "co_reserve.subs[0].duration_millis"},
	}
	for _, tc := range cases {
		res := h.must(now, INVALID, tc.cmd)
		if f := res.GetInvalid().GetField(); f != tc.field {
			t.Errorf("%v: field %q (%s), want %q", tc.cmd.GetCoReserve(), f, res.GetMessage(), tc.field)
		}
	}
	if h.state("c/0") != GONE {
		t.Fatalf("c/0 exists after refusals")
	}
	checkInvariants(t, h.f)
}

// TestCoReserveNeedsVersion2: a version-1 envelope cannot carry it.
func TestCoReserveNeedsVersion2(t *testing.T) {
	c := coReserve("c", 0, []string{"y"}, coSub(1, 10, 10))
	c.Version = 1
	if _, err := Encode(c); err == nil {
		t.Fatal("version-1 co-reservation encoded")
	}
	c.Version = 0
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Decode(b); err != nil || d.GetVersion() != versionPolicies {
		t.Fatalf("decoded %v, %v", d, err)
	}
}
