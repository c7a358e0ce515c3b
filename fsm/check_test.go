package fsm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

func TestPublicField(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"request.labels", "labels"},
		{`request.labels["team"]`, `labels["team"]`},
		{"request.hold_ttl_millis", "hold_ttl"},
		{"request.parts[1].amount", "shape.parts[1].amount"},
		{"request.duration_millis", "shape.duration"},
		{"request.start_millis", "shape.exact_start"},
		{"request.not_before_millis", "shape.not_before"},
		{"request.id", "shape.id"},
		{"modify.id", "id"},
		{"modify.hold_ttl_millis", "hold_ttl"},
		{"modify.start_millis", "shape.not_before"},
		{"modify.window_duration_millis", "shape.duration"},
		{"modify.parts[0].resource", "shape.parts[0].resource"},
		{"complete.at_millis", "at"},
		{"complete.id", "id"},
		{"create_resource.policy.max_pushes", "resource.max_pushes"},
		{"create_resource.policy", "resource.policy"},
		{"create_resource.name", "resource.name"},
		{"set_policy.policy.min_success_permille", "min_success_permille"},
		{"set_policy.name", "name"},
		{"submit_job.part.amount", "amount"},
		{"submit_job.part", "resource"},
		{"submit_job.duration_millis", "duration"},
		{"submit_job.not_before_millis", "not_before"},
		{"submit_job.id", "id"},
		{"submit_job.labels", "labels"},
		{"co_reserve.subs[0].start_millis", "subs[0].start"},
		{"co_reserve.subs[2].duration_millis", "subs[2].duration"},
		{"co_reserve.subs[2].amount", "subs[2].amount"},
		{"co_reserve.candidates[1]", "candidates[1]"},
		{"co_reserve.min_joint_permille", "min_joint_permille"},
		{"target.id", "id"},
		{"owner", "owner"},
		{"update_resource.capacity", "capacity"},
		{"update_resource.to_millis", "to"},
		{"delete_resource.name", "name"},
		{"idempotency_key", "idempotency_key"},
		{"", ""},
	} {
		if got := PublicField(tc.in); got != tc.want {
			t.Errorf("PublicField(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkFixture is the state TestCheck applies its commands to: REJECT
// resources cpu (16) and gpu (4), MOVE_VARIABLE batch (10), and alice's
// committed reservation c on cpu at [5000, 5100), which a modification
// can reach.
func checkFixture(t *testing.T) *harness {
	h := newHarness(t, Config{DefaultHoldTTL: 100, MaxHoldTTL: 1000})
	h.must(1000, OK, createRes("cpu", 16))
	h.must(1000, OK, createRes("gpu", 4))
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	h.must(1000, OK, reserve("c", "cpu", 2, 100, withStart(5000)))
	return h
}

// TestCheck: every stateless refusal, each named by Check exactly as Apply
// names it on a state where nothing else refuses the command first, and
// commands Check passes that Apply accepts.
func TestCheck(t *testing.T) {
	long := strings.Repeat("x", 300)
	manyLabels := map[string]string{}
	for i := range maxLabels + 1 {
		manyLabels[fmt.Sprint(i)] = ""
	}
	manyParts := make([]*fsmv1.Part, maxParts+1)
	for i := range manyParts {
		manyParts[i] = part(fmt.Sprint("r", i), 1)
	}
	manySubs := make([]*fsmv1.CoSub, maxParts+1)
	manyCands := make([]string, maxParts+1)
	for i := range manySubs {
		manySubs[i], manyCands[i] = coSub(1, 2000, 10), fmt.Sprint("r", i)
	}
	with := func(c *fsmv1.Command, f func(*fsmv1.Command)) *fsmv1.Command { f(c); return c }
	create := func(f func(*fsmv1.CreateResource)) *fsmv1.Command {
		c := createRes("new", 4)
		f(c.GetCreateResource())
		return c
	}
	modifyTTL := func(ttl int64) *fsmv1.Command {
		c := modify("c", nil, nil, nil)
		c.GetModify().HoldTtlMillis = ttl
		return c
	}
	job := func(f func(*fsmv1.SubmitJob)) *fsmv1.Command {
		c := submitJob("j", "batch", 2, 50, 2000)
		f(c.GetSubmitJob())
		return c
	}
	co := func(f func(*fsmv1.CoReserve)) *fsmv1.Command {
		c := coReserve("co", 0, []string{"cpu", "gpu"}, coSub(1, 2000, 10))
		f(c.GetCoReserve())
		return c
	}
	for _, tc := range []struct {
		name         string
		cmd          *fsmv1.Command
		path, reason string // "" when the command is valid
	}{
		{"create name", create(func(c *fsmv1.CreateResource) { c.Name = "" }), "create_resource.name", "must not be empty"},
		{"create name char", create(func(c *fsmv1.CreateResource) { c.Name = "a b" }), "create_resource.name", `character ' ' not allowed (use A-Z a-z 0-9 . _ : / -)`},
		{"create capacity", create(func(c *fsmv1.CreateResource) { c.Capacity = 0 }), "create_resource.capacity", "must be > 0"},
		{"create unit", create(func(c *fsmv1.CreateResource) { c.Unit = long }), "create_resource.unit", "longer than 64 bytes"},
		{"create labels", create(func(c *fsmv1.CreateResource) { c.Labels = manyLabels }), "create_resource.labels", "more than 64 labels"},
		{"create label key", create(func(c *fsmv1.CreateResource) { c.Labels = map[string]string{"": "x"} }), "create_resource.labels", "empty key"},
		{"create label value", create(func(c *fsmv1.CreateResource) { c.Labels = map[string]string{"k": strings.Repeat("v", 1025)} }), `create_resource.labels["k"]`, "value longer than 1024 bytes"},
		{"create policy", create(func(c *fsmv1.CreateResource) { c.Policy = spec(9, 0, 0) }), "create_resource.policy.policy", "unknown admission policy 9"},
		{"create policy v*", create(func(c *fsmv1.CreateResource) { c.Policy = spec(MOVE, 5, 0) }), "create_resource.policy.min_success_permille", "only RELAXED uses it (leave it 0)"},
		{"create policy v* range", create(func(c *fsmv1.CreateResource) { c.Policy = spec(RELAXED, 1001, 0) }), "create_resource.policy.min_success_permille", "must be in 1..1000 (0 selects 800)"},
		{"create policy pushes", create(func(c *fsmv1.CreateResource) { c.Policy = spec(RELAXED, 0, 2) }), "create_resource.policy.max_pushes", "only MOVE_VARIABLE uses it (leave it 0)"},
		{"create ok", create(func(*fsmv1.CreateResource) {}), "", ""},
		{"update name", updateRes("", 3, nil, nil), "update_resource.name", "must not be empty"},
		{"update capacity", updateRes("cpu", -1, nil, nil), "update_resource.capacity", "must be >= 0"},
		{"update from", updateRes("cpu", 3, proto.Int64(-1), nil), "update_resource.from_millis", "must be >= 0"},
		{"update to", updateRes("cpu", 3, proto.Int64(7000), proto.Int64(7000)), "update_resource.to_millis", "must be after from_millis"},
		{"update ok", updateRes("cpu", 20, proto.Int64(7000), proto.Int64(8000)), "", ""},
		{"delete name", deleteRes(""), "delete_resource.name", "must not be empty"},
		{"hold id", hold("a b", "cpu", 1, 10), "request.id", `character ' ' not allowed (use A-Z a-z 0-9 . _ : -)`},
		{"hold id prefix", hold("r-1", "cpu", 1, 10), "request.id", `must not start with the reserved prefix "r-"`},
		{"hold id long", hold(long, "cpu", 1, 10), "request.id", "longer than 128 bytes"},
		{"hold owner", hold("a", "cpu", 1, 10, withOwner(long)), "owner", "longer than 256 bytes"},
		{"hold parts", hold("a", "cpu", 1, 10, withParts(manyParts...)), "request.parts", "more than 64 parts"},
		{"hold ttl", hold("a", "cpu", 1, 10, withTTL(-1)), "request.hold_ttl_millis", "must be >= 0"},
		{"hold ttl max", hold("a", "cpu", 1, 10, withTTL(1001)), "request.hold_ttl_millis", "must be <= 1000"},
		{"hold labels", with(hold("a", "cpu", 1, 10), func(c *fsmv1.Command) { c.GetRequest().Labels = map[string]string{long[:129]: ""} }),
			fmt.Sprintf("request.labels[%q]", long[:129]), "key longer than 128 bytes"},
		{"hold not_before", hold("a", "cpu", 1, 10, withWindow(-1, 0)), "request.not_before_millis", "must be >= 0"},
		{"hold deadline", hold("a", "cpu", 1, 10, withWindow(2000, -1)), "request.deadline_millis", "must be >= 0 (0 means no deadline)"},
		{"hold window", hold("a", "cpu", 1, 10, withWindow(2000, 2005)), "request.deadline_millis", "booking window shorter than duration"},
		{"hold no parts", hold("a", "cpu", 1, 10, withParts()), "request.parts", "must not be empty"},
		{"hold part name", hold("a", "cpu", 1, 10, withParts(part("", 1))), "request.parts[0].resource", "must not be empty"},
		{"hold part twice", hold("a", "cpu", 1, 10, withParts(part("cpu", 1), part("cpu", 2))), "request.parts[1].resource", `duplicate resource "cpu"`},
		{"hold amount", hold("a", "cpu", 1, 10, withParts(part("cpu", 1), part("gpu", 0))), "request.parts[1].amount", "must be > 0"},
		{"hold duration", hold("a", "cpu", 1, 0), "request.duration_millis", "must be > 0"},
		{"hold exact overflow", hold("a", "cpu", 1, math.MaxInt64, withStart(2000)), "request.duration_millis", "not_before + duration overflows"},
		{"hold window overflow", hold("a", "cpu", 1, math.MaxInt64-1000, withWindow(2000, 0)), "request.duration_millis", "not_before + duration overflows"},
		{"hold ok", hold("a", "cpu", 1, 10, withWindow(2000, 3000)), "", ""},
		{"reserve ignores ttl", reserve("a", "cpu", 1, 10, withTTL(-1)), "", ""},
		{"commit id", commit(""), "target.id", "must not be empty"},
		{"abort id", abort(""), "target.id", "must not be empty"},
		{"cancel id", cancel(""), "target.id", "must not be empty"},
		{"modify id", modify("", nil, nil, nil), "modify.id", "must not be empty"},
		{"modify parts", modify("c", manyParts, nil, nil), "modify.parts", "more than 64 parts"},
		{"modify ttl", modifyTTL(-1), "modify.hold_ttl_millis", "must be >= 0"},
		{"modify ttl max", modifyTTL(1001), "modify.hold_ttl_millis", "must be <= 1000"},
		{"modify end", modify("c", nil, proto.Int64(6000), proto.Int64(6000)), "modify.end_millis", "must be after start"},
		{"modify part twice", modify("c", []*fsmv1.Part{part("gpu", 1), part("gpu", 1)}, nil, nil), "modify.parts[1].resource", `duplicate resource "gpu"`},
		{"modify amount", modify("c", []*fsmv1.Part{part("gpu", -1)}, nil, nil), "modify.parts[0].amount", "must be > 0"},
		{"modify ok", modify("c", []*fsmv1.Part{part("gpu", 1)}, proto.Int64(6000), nil), "", ""},
		{"complete id", complete("", nil), "complete.id", "must not be empty"},
		{"set_policy name", setPolicy("", spec(MOVE, 0, 0)), "set_policy.name", "must not be empty"},
		{"set_policy spec", setPolicy("gpu", spec(REJECT, 0, 3)), "set_policy.policy.max_pushes", "only MOVE_VARIABLE uses it (leave it 0)"},
		{"set_policy ok", setPolicy("gpu", spec(MOVE, 0, 3)), "", ""},
		{"job id", job(func(j *fsmv1.SubmitJob) { j.Id = "r-9" }), "submit_job.id", `must not start with the reserved prefix "r-"`},
		{"job part", job(func(j *fsmv1.SubmitJob) { j.Part = nil }), "submit_job.part", "must be set"},
		{"job labels", job(func(j *fsmv1.SubmitJob) { j.Labels = map[string]string{"": ""} }), "submit_job.labels", "empty key"},
		{"job not_before", job(func(j *fsmv1.SubmitJob) { j.NotBeforeMillis = -5 }), "submit_job.not_before_millis", "must be >= 0"},
		{"job resource", job(func(j *fsmv1.SubmitJob) { j.Part.Resource = "" }), "submit_job.part.resource", "must not be empty"},
		{"job amount", job(func(j *fsmv1.SubmitJob) { j.Part.Amount = 0 }), "submit_job.part.amount", "must be > 0"},
		{"job duration", job(func(j *fsmv1.SubmitJob) { j.DurationMillis = -1 }), "submit_job.duration_millis", "must be > 0"},
		{"job overflow", job(func(j *fsmv1.SubmitJob) { j.DurationMillis = math.MaxInt64 - 10 }), "submit_job.duration_millis", "not_before + duration overflows"},
		{"job ok", job(func(*fsmv1.SubmitJob) {}), "", ""},
		{"co id", co(func(c *fsmv1.CoReserve) { c.Id = "a/b" }), "co_reserve.id", `character '/' not allowed (use A-Z a-z 0-9 . _ : -)`},
		{"co id long", co(func(c *fsmv1.CoReserve) { c.Id = long[:127] }), "co_reserve.id", fmt.Sprintf("%q is longer than 128 bytes", long[:127]+"/0")},
		{"co subs", co(func(c *fsmv1.CoReserve) { c.Subs = nil }), "co_reserve.subs", "must not be empty"},
		{"co many subs", co(func(c *fsmv1.CoReserve) { c.Subs = manySubs }), "co_reserve.subs", "more than 64 sub-requests"},
		{"co candidates", co(func(c *fsmv1.CoReserve) { c.Candidates = nil }), "co_reserve.candidates", "must not be empty"},
		{"co many candidates", co(func(c *fsmv1.CoReserve) { c.Candidates = manyCands }), "co_reserve.candidates", "more than 64 candidates"},
		{"co joint", co(func(c *fsmv1.CoReserve) { c.MinJointPermille = 1001 }), "co_reserve.min_joint_permille", "must be in 0..1000"},
		{"co labels", co(func(c *fsmv1.CoReserve) { c.Labels = manyLabels }), "co_reserve.labels", "more than 64 labels"},
		{"co empty candidate", co(func(c *fsmv1.CoReserve) { c.Candidates = []string{"cpu", ""} }), "co_reserve.candidates[1]", `no resource ""`},
		{"co candidate twice", co(func(c *fsmv1.CoReserve) { c.Candidates = []string{"cpu", "gpu", "cpu"} }), "co_reserve.candidates[2]", `resource "cpu" named twice`},
		{"co amount", co(func(c *fsmv1.CoReserve) { c.Subs = append(c.Subs, coSub(0, 2000, 10)) }), "co_reserve.subs[1].amount", "must be > 0"},
		{"co duration", co(func(c *fsmv1.CoReserve) { c.Subs = append(c.Subs, coSub(1, 2000, 0)) }), "co_reserve.subs[1].duration_millis", "must be > 0"},
		{"co overflow", co(func(c *fsmv1.CoReserve) { c.Subs = append(c.Subs, coSub(1, 2000, math.MaxInt64)) }), "co_reserve.subs[1].duration_millis", "start + duration overflows"},
		{"co ok", co(func(*fsmv1.CoReserve) {}), "", ""},
		{"expire", tick(), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := checkFixture(t)
			err := h.f.Check(tc.cmd)
			res := h.apply(1000, tc.cmd)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if res.GetStatus() != OK {
					t.Fatalf("Apply: %s %s", res.GetStatus(), res.GetMessage())
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Check = %v, want a *FieldError", err)
			}
			if fe.Path != tc.path || fe.Reason != tc.reason || fe.Field != PublicField(tc.path) {
				t.Fatalf("Check = %+v, want path %q reason %q", *fe, tc.path, tc.reason)
			}
			if want := fmt.Sprintf("invalid %s: %s", fe.Field, fe.Reason); err.Error() != want {
				t.Fatalf("Error() = %q, want %q", err, want)
			}
			inv := res.GetInvalid()
			if res.GetStatus() != INVALID || inv.GetField() != tc.path || inv.GetReason() != tc.reason {
				t.Fatalf("Apply = %s %q: %q, want INVALID %q: %q", res.GetStatus(), inv.GetField(), inv.GetReason(), tc.path, tc.reason)
			}
		})
	}
}

func TestCheckEnvelope(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, cmd := range map[string]*fsmv1.Command{
		"nil":          nil,
		"unknown type": {Type: 99},
		"no payload":   {Type: fsmv1.Command_TYPE_HOLD},
		"wrong one":    {Type: fsmv1.Command_TYPE_HOLD, Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: "a"}}},
	} {
		if err := f.Check(cmd); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Check = %v, want ErrMalformed", name, err)
		}
	}
}

// stateDependent reports whether an Invalid result of Apply depends on the
// state, so that Check cannot predict it: the log time, a resource's
// capacity or policy, the targeted reservation, whether a candidate
// exists, or (for a request without an exact start and for a job) a
// start moved to the log time that makes start + duration overflow.
func stateDependent(cmd *fsmv1.Command, inv *fsmv1.Invalid, logNow int64) bool {
	field, reason := inv.GetField(), inv.GetReason()
	overflows := func(nb, dur int64) bool { return dur > math.MaxInt64-max(nb, logNow) }
	switch {
	case strings.Contains(reason, "log time"),
		strings.HasPrefix(reason, "exceeds the capacity"),
		field == "idempotency_key", // a key remembered with another fingerprint
		field == "complete.at_millis",
		field == "modify.id" && strings.HasPrefix(reason, "modifying a variable job"),
		strings.Contains(reason, "is RELAXED: a reservation cannot be modified onto it"),
		field == "request.parts" && strings.Contains(reason, "has admission policy"),
		strings.HasPrefix(field, "co_reserve.candidates[") && strings.HasPrefix(reason, "no resource ") && reason != `no resource ""`:
		return true
	case field == "modify.end_millis":
		return cmd.GetModify().StartMillis == nil || cmd.GetModify().EndMillis == nil
	case reason == "not_before + duration overflows" && field == "request.duration_millis":
		req := cmd.GetRequest()
		return req.StartMillis == nil && overflows(req.GetNotBeforeMillis(), req.GetDurationMillis())
	case reason == "not_before + duration overflows" && field == "submit_job.duration_millis":
		j := cmd.GetSubmitJob()
		return overflows(j.GetNotBeforeMillis(), j.GetDurationMillis())
	}
	return false
}

// checkAgreement asserts the contract between Check (its answer chk,
// taken before the command was applied) and Apply's result res.
func checkAgreement(t testing.TB, cmd *fsmv1.Command, chk error, res *fsmv1.Result) {
	t.Helper()
	if res.GetReplayed() {
		return // the first result of an idempotency key, whatever this command says
	}
	inv := res.GetInvalid()
	isInvalid := res.GetStatus() == fsmv1.Result_STATUS_INVALID
	if chk == nil {
		if isInvalid && !stateDependent(cmd, inv, res.GetNowMillis()) {
			t.Fatalf("Check passed %v\nbut Apply refused %s: %s", cmd, inv.GetField(), inv.GetReason())
		}
		return
	}
	var fe *FieldError
	if !errors.As(chk, &fe) {
		t.Fatalf("Check returned %v, not a *FieldError, for %v", chk, cmd)
	}
	if res.GetStatus() == fsmv1.Result_STATUS_OK {
		t.Fatalf("Check refused %v (%v) but Apply accepted it", cmd, chk)
	}
	if !isInvalid || stateDependent(cmd, inv, res.GetNowMillis()) {
		return // a refusal of the state came first
	}
	if inv.GetField() != fe.Path {
		t.Fatalf("Check refused %v with %s: %s, Apply with %s: %s", cmd, fe.Path, fe.Reason, inv.GetField(), inv.GetReason())
	}
	sameOverflow := strings.HasSuffix(fe.Reason, " + duration overflows") && strings.HasSuffix(inv.GetReason(), " + duration overflows")
	if inv.GetReason() != fe.Reason && !sameOverflow {
		t.Fatalf("Check refused %v with %s: %s, Apply with %s: %s", cmd, fe.Path, fe.Reason, inv.GetField(), inv.GetReason())
	}
}

// breakField changes one field of c to a value no state accepts (or
// leaves c alone when its type has nothing to break), so the property
// streams reach every check.
func (g *gen) breakField(c *fsmv1.Command) {
	long := strings.Repeat("z", 130+g.r.IntN(200))
	huge := int64(math.MaxInt64 - g.r.IntN(1000))
	k := g.r.IntN(12)
	if k == 0 && c.GetType() != fsmv1.Command_TYPE_EXPIRE {
		c.Owner = strings.Repeat("o", 257)
		return
	}
	switch c.GetType() {
	case fsmv1.Command_TYPE_CREATE_RESOURCE:
		cr := c.GetCreateResource()
		[]func(){
			func() { cr.Name = "bad name" }, func() { cr.Capacity = -3 }, func() { cr.Unit = long },
			func() { cr.Labels = map[string]string{"": "x"} }, func() { cr.Policy = spec(MOVE, 10, 0) },
		}[k%5]()
	case fsmv1.Command_TYPE_UPDATE_RESOURCE:
		u := c.GetUpdateResource()
		[]func(){
			func() { u.Name = "" }, func() { u.Capacity = -1 }, func() { u.FromMillis = proto.Int64(-7) },
			func() { u.FromMillis, u.ToMillis = proto.Int64(g.now+50), proto.Int64(g.now+50-int64(g.r.IntN(50))) },
		}[k%4]()
	case fsmv1.Command_TYPE_DELETE_RESOURCE:
		c.GetDeleteResource().Name = ""
	case fsmv1.Command_TYPE_HOLD, fsmv1.Command_TYPE_RESERVE:
		req := c.GetRequest()
		[]func(){
			func() { req.Id = "r-" + req.GetId() }, func() { req.Id = long }, func() { req.HoldTtlMillis = -1 },
			func() { req.HoldTtlMillis = 1 << 40 }, func() { req.Labels = map[string]string{long: ""} },
			func() { req.StartMillis, req.NotBeforeMillis = nil, -1 }, func() { req.StartMillis, req.DeadlineMillis = nil, -1 },
			func() {
				req.StartMillis, req.NotBeforeMillis, req.DeadlineMillis = nil, g.now+10, g.now+10+req.GetDurationMillis()/2
			},
			func() { req.Parts = nil }, func() { req.Parts = append(req.Parts, part("", 1)) },
			func() { req.Parts = append(req.Parts, part(req.GetParts()[0].GetResource(), 1)) },
			func() { req.Parts[0].Amount = -int64(g.r.IntN(3)) }, func() { req.DurationMillis = -int64(g.r.IntN(3)) },
			func() { req.DurationMillis = huge },
		}[g.r.IntN(14)]()
	case fsmv1.Command_TYPE_COMMIT, fsmv1.Command_TYPE_ABORT, fsmv1.Command_TYPE_CANCEL:
		c.GetTarget().Id = ""
	case fsmv1.Command_TYPE_SET_LIMITS, fsmv1.Command_TYPE_APPROVE, fsmv1.Command_TYPE_DENY:
		breakLimits(c, k, long)
	case fsmv1.Command_TYPE_COMPLETE:
		c.GetComplete().Id = ""
	case fsmv1.Command_TYPE_MODIFY:
		m := c.GetModify()
		[]func(){
			func() { m.Id = "" }, func() { m.HoldTtlMillis = -2 }, func() { m.HoldTtlMillis = 1 << 33 },
			func() {
				m.StartMillis, m.EndMillis = proto.Int64(g.now+100), proto.Int64(g.now+100-int64(g.r.IntN(20)))
			},
			func() { m.Parts = []*fsmv1.Part{part("gpu", 1), part("gpu", 2)} }, func() { m.Parts = []*fsmv1.Part{part("cpu", 0)} },
			func() { m.Parts = []*fsmv1.Part{part("", 1)} },
		}[k%7]()
	case fsmv1.Command_TYPE_SET_POLICY:
		sp := c.GetSetPolicy()
		[]func(){func() { sp.Name = "" }, func() { sp.Policy = spec(REJECT, 0, 1) }, func() { sp.Policy = spec(7, 0, 0) }}[k%3]()
	case fsmv1.Command_TYPE_SUBMIT_JOB:
		j := c.GetSubmitJob()
		[]func(){
			func() { j.Part = nil }, func() { j.NotBeforeMillis = -1 }, func() { j.Part.Resource = "" }, func() { j.Part.Amount = 0 },
			func() { j.DurationMillis = 0 }, func() { j.DurationMillis = huge }, func() { j.Id = "bad id" },
		}[k%7]()
	case fsmv1.Command_TYPE_CO_RESERVE:
		co := c.GetCoReserve()
		[]func(){
			func() { co.Subs = nil }, func() { co.Candidates = nil }, func() { co.MinJointPermille = 1001 },
			func() { co.Candidates = append(co.Candidates, "") }, func() { co.Candidates = append(co.Candidates, co.GetCandidates()[0]) },
			func() { co.Subs[0].Amount = 0 }, func() { co.Subs[0].DurationMillis = -1 }, func() { co.Subs[0].DurationMillis = huge },
			func() { co.Id = long[:127] },
		}[k%9]()
	}
}

// asV3 makes c a version 3 entry and, one time in three, gives it a
// field that only version 3 refuses (the end of time, a name or ID no
// row can have) or carries (a modify window, a forced delete, a
// fingerprint).
func (g *gen) asV3(c *fsmv1.Command) {
	if minVersion(c) > versionEdge {
		return // a version 4 command (limits)
	}
	c.Version = versionEdge
	if g.r.IntN(3) != 0 {
		return
	}
	late := MaxTimeMillis - int64(g.r.IntN(5_000))
	k := g.r.IntN(4)
	switch c.GetType() {
	case fsmv1.Command_TYPE_HOLD, fsmv1.Command_TYPE_RESERVE:
		req := c.GetRequest()
		[]func(){
			func() { req.StartMillis, req.NotBeforeMillis, req.DeadlineMillis = nil, late, 0 },
			func() { req.StartMillis = proto.Int64(late) },
			func() { req.StartMillis, req.DeadlineMillis = nil, MaxTimeMillis+1+int64(g.r.IntN(9)) },
			func() { req.Parts = append(req.Parts, part("bad name", 1)) },
		}[k]()
	case fsmv1.Command_TYPE_MODIFY:
		m := c.GetModify()
		[]func(){
			func() {
				m.StartMillis, m.EndMillis, m.WindowDurationMillis, m.NotBeforeMillis = nil, nil, 1000, g.now+int64(g.r.IntN(5000))
			},
			func() { m.WindowDurationMillis, m.DeadlineMillis = 1000, g.now+int64(g.r.IntN(3000)) },
			func() { m.StartMillis, m.EndMillis, m.WindowDurationMillis, m.NotBeforeMillis = nil, nil, 10_000, late },
			func() { m.Id = "a b" },
		}[k]()
	case fsmv1.Command_TYPE_COMMIT, fsmv1.Command_TYPE_ABORT, fsmv1.Command_TYPE_CANCEL:
		c.GetTarget().Id = []string{"a b", "x\x00", strings.Repeat("i", 129), c.GetTarget().GetId()}[k]
	case fsmv1.Command_TYPE_DELETE_RESOURCE:
		c.GetDeleteResource().Force = true
		if k == 0 {
			c.GetDeleteResource().Name = "bad name"
		}
	case fsmv1.Command_TYPE_UPDATE_RESOURCE:
		c.GetUpdateResource().FromMillis, c.GetUpdateResource().ToMillis = proto.Int64(g.now+10), proto.Int64(MaxTimeMillis+int64(k))
	case fsmv1.Command_TYPE_SUBMIT_JOB:
		if j := c.GetSubmitJob(); j.GetPart() != nil {
			j.NotBeforeMillis = late
		}
	case fsmv1.Command_TYPE_CO_RESERVE:
		if subs := c.GetCoReserve().GetSubs(); len(subs) > 0 {
			subs[0].StartMillis = late
		}
	}
	if c.GetIdempotencyKey() != "" {
		c.Fingerprint = []byte{byte(k)}
	}
}

// TestCheckAgreesWithApply runs random streams (a quarter of the commands
// with a field broken on purpose) and checks the Check/Apply contract
// (checkAgreement) before every command.
func TestCheckAgreesWithApply(t *testing.T) {
	counts := map[string]int{}
	for _, seed := range seeds() {
		g := &gen{r: rand.New(rand.NewPCG(seed, 0xc4ec)), now: 1_000}
		h := newHarness(t, propConfig)
		for i := range *propSteps {
			cmd := g.command()
			switch {
			case i < len(genResources):
				cmd = createPolicyRes(genResources[i], int64(8+4*i), []*fsmv1.PolicySpec{nil, spec(MOVE, 0, 2), spec(RELAXED, 10, 0)}[i])
			case i == len(genResources):
				cmd = createPolicyRes("lax", 10, spec(RELAXED, 10, 0))
			case g.r.IntN(4) == 0:
				g.breakField(cmd)
			}
			if i > len(genResources) && g.r.IntN(3) == 0 {
				// A version 3 entry, a third of them with a field only
				// version 3 refuses or carries.
				g.asV3(cmd)
				counts["version 3"]++
			}
			chk := h.f.Check(cmd)
			res := h.apply(g.now, cmd)
			checkAgreement(t, cmd, chk, res)
			g.ids = append(g.ids, resultIDs(res)...)
			switch {
			case chk != nil && res.GetStatus() == INVALID:
				counts["refused by both"]++
			case chk != nil:
				counts["refused by Check, by the state in Apply"]++
			case res.GetStatus() == INVALID:
				counts["passed by Check, refused by the state in Apply"]++
			}
		}
	}
	t.Logf("%v", counts)
	if counts["refused by both"] < 25*len(seeds()) {
		t.Errorf("only %d refusals checked against Apply's", counts["refused by both"])
	}
}

// FuzzCheck checks the Check/Apply contract on every command Decode
// accepts, applied to a state with resources and reservations in every
// live state, and that Check never panics.
func FuzzCheck(f *testing.F) {
	addCommandSeeds(f)
	g := &gen{r: rand.New(rand.NewPCG(3, 4)), now: 1_000}
	for range 40 {
		cmd := g.command()
		g.breakField(cmd)
		if b, err := Encode(cmd); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := Decode(data)
		if err != nil {
			return
		}
		m := fuzzBase(t)
		chk := m.Check(cmd)
		res, err := DecodeResult(m.ApplyCommand(100, data))
		if err != nil {
			t.Fatal(err)
		}
		checkAgreement(t, cmd, chk, res)
	})
}

// TestCheckConcurrent calls Check from several goroutines while Apply
// runs (-race checks that it touches no state) and requires the same
// answers as before.
func TestCheckConcurrent(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(9, 9)), now: 1_000}
	var cmds []*fsmv1.Command
	for range 200 {
		cmd := g.command()
		if g.r.IntN(2) == 0 {
			g.breakField(cmd)
		}
		cmds = append(cmds, cmd)
	}
	h := newHarness(t, propConfig)
	want := make([]string, len(cmds))
	for i, c := range cmds {
		want[i] = fmt.Sprint(h.f.Check(c))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, c := range cmds {
				if got := fmt.Sprint(h.f.Check(c)); got != want[i] {
					errs <- fmt.Sprintf("command %d: Check = %s, before %s", i, got, want[i])
					return
				}
			}
		}()
	}
	for _, c := range cmds {
		h.apply(g.now, c)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
