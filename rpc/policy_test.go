package rpc_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
)

// createPolicyResource adds a resource with a policy and checks that the
// response carries it with the defaults filled in.
func createPolicyResource(t *testing.T, ops api, r *ledgerdv1.Resource) {
	t.Helper()
	got := must[*connect.Response[ledgerdv1.CreateResponse]](t)(ops.rsc.Create(context.Background(), connect.NewRequest(&ledgerdv1.CreateRequest{Resource: r}))).Msg.Resource
	vstar, pushes := r.MinSuccessPermille, r.MaxPushes
	if r.Policy == ledgerdv1.Policy_POLICY_RELAXED && vstar == 0 {
		vstar = 800
	}
	if r.Policy == ledgerdv1.Policy_POLICY_MOVE_VARIABLE && pushes == 0 {
		pushes = 8
	}
	if got.Policy != r.Policy || got.MinSuccessPermille != vstar || got.MaxPushes != pushes {
		t.Fatalf("created %v, want policy %v v*=%d max_pushes=%d", got, r.Policy, vstar, pushes)
	}
}

func submit(c api, id, res string, amount int64, dur, notBefore time.Duration) (*ledgerdv1.Reservation, error) {
	r, err := c.res.SubmitJob(context.Background(), connect.NewRequest(&ledgerdv1.SubmitJobRequest{
		Id: id, Resource: res, Amount: amount, Duration: durationpb.New(dur), NotBefore: ts(notBefore),
	}))
	if err != nil {
		return nil, err
	}
	return r.Msg.Reservation, nil
}

func exactShape(res string, amount int64, start, dur time.Duration) *ledgerdv1.Shape {
	return &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: res, Amount: amount}}, Duration: durationpb.New(dur), ExactStart: ts(start)}
}

// span reports whether r is planned over [start, end) relative to t0.
func span(r *ledgerdv1.Reservation, start, end time.Duration) bool {
	return r.Start.AsTime().Equal(t0.Add(start)) && r.End.AsTime().Equal(t0.Add(end))
}

// watchFor streams events from version 1 until one of type typ for
// reservation id arrives, and returns it.
func watchFor(t *testing.T, c api, typ ledgerdv1.EventType, id string) *ledgerdv1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.res.Watch(ctx, connect.NewRequest(&ledgerdv1.WatchRequest{FromVersion: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for stream.Receive() {
		if e := stream.Msg().Event; e != nil && e.Type == typ && e.Reservation.GetId() == id {
			return e
		}
	}
	t.Fatalf("watch ended without a %v event for %s: %v", typ, id, stream.Err())
	return nil
}

// TestMoveVariableOverConnect plans variable jobs on a MOVE_VARIABLE
// resource, admits a reservation over one of them, and sees the job moved
// in the response, in Get and on the Watch stream; once pinned by its
// push bound the job is no longer moved and the reservation is rejected.
func TestMoveVariableOverConnect(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	createPolicyResource(t, ops, &ledgerdv1.Resource{Name: "batch", Capacity: 10, Unit: "nodes", Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE, MaxPushes: 1})

	j1 := must[*ledgerdv1.Reservation](t)(submit(acme, "j1", "batch", 10, 2*time.Hour, time.Hour))
	j2 := must[*ledgerdv1.Reservation](t)(submit(acme, "j2", "batch", 10, time.Hour, time.Hour))
	for _, c := range []struct {
		r          *ledgerdv1.Reservation
		start, end time.Duration
	}{{j1, time.Hour, 3 * time.Hour}, {j2, 3 * time.Hour, 4 * time.Hour}} {
		if c.r.Kind != ledgerdv1.ReservationKind_RESERVATION_KIND_VARIABLE_JOB || c.r.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED ||
			!span(c.r, c.start, c.end) || !c.r.NotBefore.AsTime().Equal(t0.Add(time.Hour)) || c.r.Tenant != "acme" {
			t.Fatalf("submitted job = %v, want a planned variable job over [%v, %v)", c.r, c.start, c.end)
		}
	}

	// 6 nodes at 1h30 collide with j1 only: admitted, j1 moves behind j2.
	resp := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("batch", 6, 90*time.Minute, time.Hour)}))).Msg
	if r := resp.Reservation; r.Kind != ledgerdv1.ReservationKind_RESERVATION_KIND_RESERVATION || !span(r, 90*time.Minute, 150*time.Minute) || r.Relaxed {
		t.Fatalf("reservation = %v", r)
	}
	if len(resp.Moved) != 1 || resp.Moved[0].Id != "j1" || !resp.Moved[0].From.AsTime().Equal(t0.Add(time.Hour)) || !resp.Moved[0].To.AsTime().Equal(t0.Add(4*time.Hour)) {
		t.Fatalf("moved = %v, want j1 from 1h to 4h", resp.Moved)
	}
	got := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: "j1"}))).Msg.Reservation
	if !span(got, 4*time.Hour, 6*time.Hour) || got.Pushes != 1 || got.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("j1 after the move = %v", got)
	}
	if e := watchFor(t, acme, ledgerdv1.EventType_EVENT_TYPE_REPLANNED, "j1"); !span(e.Reservation, 4*time.Hour, 6*time.Hour) || e.Action != "replanned" {
		t.Fatalf("replanned event = %v", e)
	}
	if e := watchFor(t, acme, ledgerdv1.EventType_EVENT_TYPE_JOB_SUBMITTED, "j2"); !span(e.Reservation, 3*time.Hour, 4*time.Hour) {
		t.Fatalf("submitted event = %v", e)
	}

	// j1 was pushed once and is now pinned: a reservation over it is
	// refused like on a REJECT resource, and nothing changes.
	before := state(t, ops)
	_, err := acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("batch", 6, 270*time.Minute, time.Hour)}))
	if _, ok := rpc.Rejection(err); connect.CodeOf(err) != connect.CodeFailedPrecondition || !ok {
		t.Fatalf("reserve over a pinned job: %v, want FailedPrecondition with a rejection", err)
	}
	if !bytes.Equal(before, state(t, ops)) {
		t.Fatal("a rejected reservation changed the ledger")
	}

	// A retry of a submission with the same key returns the first job.
	req := &ledgerdv1.SubmitJobRequest{Resource: "batch", Amount: 1, Duration: durationpb.New(time.Hour), IdempotencyKey: "job-k1"}
	first := must[*connect.Response[ledgerdv1.SubmitJobResponse]](t)(acme.res.SubmitJob(ctx, connect.NewRequest(req))).Msg.Reservation
	again := must[*connect.Response[ledgerdv1.SubmitJobResponse]](t)(acme.res.SubmitJob(ctx, connect.NewRequest(req))).Msg.Reservation
	if first.Id == "" || again.Id != first.Id {
		t.Fatalf("retried submission: %s then %s", first.Id, again.Id)
	}

	// Under REJECT the jobs stay planned but no longer make room: j2 (never
	// pushed) now blocks a reservation.
	res := must[*connect.Response[ledgerdv1.SetPolicyResponse]](t)(ops.rsc.SetPolicy(ctx, connect.NewRequest(&ledgerdv1.SetPolicyRequest{Name: "batch", Policy: ledgerdv1.Policy_POLICY_REJECT}))).Msg.Resource
	if res.Policy != ledgerdv1.Policy_POLICY_REJECT || res.MaxPushes != 0 {
		t.Fatalf("set REJECT = %v", res)
	}
	refusal(t, ops, func() error {
		_, err := acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("batch", 6, 3*time.Hour, 30*time.Minute)}))
		return err
	}, connect.CodeFailedPrecondition, "")
	if got := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: "j2"}))).Msg.Reservation; !span(got, 3*time.Hour, 4*time.Hour) {
		t.Fatalf("j2 under REJECT = %v", got)
	}
}

// TestRelaxedOverConnect trains the release model with early completions,
// then admits an overlapping reservation on a RELAXED resource exactly when
// its estimated success probability reaches v*, and reports the violation
// when the capacity is really short at its start.
func TestRelaxedOverConnect(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	createPolicyResource(t, ops, &ledgerdv1.Resource{Name: "lab", Capacity: 10, Policy: ledgerdv1.Policy_POLICY_RELAXED, MinSuccessPermille: 501})

	// Twenty bookings of acme that each end after half their time: with the
	// prior's twenty pseudo-runs to the end, P(ratio <= 1/2) = 20/40.
	for range 20 {
		r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("lab", 1, s.Clock.Now().Sub(t0), 2*time.Hour)}))).Msg.Reservation
		s.Clock.Advance(time.Hour)
		if _, err := acme.res.Complete(ctx, connect.NewRequest(&ledgerdv1.CompleteRequest{Id: r.Id})); err != nil {
			t.Fatalf("complete %s: %v", r.Id, err)
		}
	}
	now := s.Clock.Now().Sub(t0)

	// All 10 units over [now+1h, now+3h) fit rigidly.
	r1 := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: exactShape("lab", 10, now+time.Hour, 2*time.Hour)}))).Msg.Reservation
	if r1.Relaxed || r1.ProbabilityPermille != 1000 {
		t.Fatalf("rigid admission = %v", r1)
	}
	// Ten more from now+2h need r1 to end by half its time: p = 0.5 < v*.
	overlap := &ledgerdv1.ReserveRequest{Shape: exactShape("lab", 10, now+2*time.Hour, 2*time.Hour)}
	before := state(t, ops)
	if _, err := acme.res.Reserve(ctx, connect.NewRequest(overlap)); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("overlap below v*: %v, want FailedPrecondition", err)
	}
	if !bytes.Equal(before, state(t, ops)) {
		t.Fatal("a rejected relaxed admission changed the ledger")
	}
	// At v* = 0.5 it is admitted, by overlap, with its probability.
	res := must[*connect.Response[ledgerdv1.SetPolicyResponse]](t)(ops.rsc.SetPolicy(ctx, connect.NewRequest(&ledgerdv1.SetPolicyRequest{Name: "lab", Policy: ledgerdv1.Policy_POLICY_RELAXED, MinSuccessPermille: 500}))).Msg.Resource
	if res.Policy != ledgerdv1.Policy_POLICY_RELAXED || res.MinSuccessPermille != 500 {
		t.Fatalf("set policy = %v", res)
	}
	r2 := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(overlap))).Msg.Reservation
	if !r2.Relaxed || r2.ProbabilityPermille != 500 || r2.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("relaxed admission = %v", r2)
	}
	// While it overbooks the resource, lab cannot leave RELAXED.
	refusal(t, ops, func() error {
		_, err := ops.rsc.SetPolicy(ctx, connect.NewRequest(&ledgerdv1.SetPolicyRequest{Name: "lab", Policy: ledgerdv1.Policy_POLICY_REJECT}))
		return err
	}, connect.CodeFailedPrecondition, "")

	// r1 runs to its end, so at now+2h the capacity is short by 10.
	s.Clock.Advance(time.Hour)
	if err := s.Log.Tick(); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(time.Hour)
	if err := s.Log.Tick(); err != nil {
		t.Fatal(err)
	}
	got := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: r2.Id}))).Msg.Reservation
	if got.State != ledgerdv1.ReservationState_RESERVATION_STATE_DEGRADED || got.ShortUnits != 10 {
		t.Fatalf("violated reservation = %v, want DEGRADED short 10", got)
	}
	if e := watchFor(t, acme, ledgerdv1.EventType_EVENT_TYPE_VIOLATED, r2.Id); e.Reservation.ShortUnits != 10 || e.Action != "violated" {
		t.Fatalf("violated event = %v", e)
	}
	// The policy change was an event too, visible to every tenant.
	h := must[*connect.Response[ledgerdv1.HistoryResponse]](t)(newAPI(s.URLs[0], agenttest.TokenGlobex).res.History(ctx, connect.NewRequest(&ledgerdv1.HistoryRequest{FromVersion: 1, Limit: 1000})))
	changed := false
	for _, e := range h.Msg.Events {
		if e.Type == ledgerdv1.EventType_EVENT_TYPE_POLICY_CHANGED && e.Resource.GetName() == "lab" && e.Resource.MinSuccessPermille == 500 {
			changed = true
		}
		if e.Reservation != nil && e.Reservation.Tenant != "globex" {
			t.Fatalf("globex sees acme's event %v", e)
		}
	}
	if !changed {
		t.Fatal("no POLICY_CHANGED event for lab in the history")
	}
	// A forced delete cancels the degraded reservation with the others.
	if _, err := ops.rsc.Delete(ctx, connect.NewRequest(&ledgerdv1.DeleteRequest{Name: "lab", Force: true})); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	for _, id := range []string{r1.Id, r2.Id} {
		if got := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: id}))).Msg.Reservation; got.State != ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED {
			t.Fatalf("%s after the forced delete: %v", id, got.State)
		}
	}
}

// TestPolicyBadInputs: every malformed policy or job request names the
// field at fault and changes nothing.
func TestPolicyBadInputs(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	createPolicyResource(t, ops, &ledgerdv1.Resource{Name: "batch", Capacity: 10, Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE})
	must[*ledgerdv1.Reservation](t)(submit(acme, "j1", "batch", 2, time.Hour, time.Hour))

	create := func(r *ledgerdv1.Resource) error {
		_, err := ops.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: r}))
		return err
	}
	setPolicy := func(c api, req *ledgerdv1.SetPolicyRequest) error {
		_, err := c.rsc.SetPolicy(ctx, connect.NewRequest(req))
		return err
	}
	job := func(req *ledgerdv1.SubmitJobRequest) error {
		_, err := acme.res.SubmitJob(ctx, connect.NewRequest(req))
		return err
	}
	okJob := func() *ledgerdv1.SubmitJobRequest {
		return &ledgerdv1.SubmitJobRequest{Resource: "batch", Amount: 1, Duration: durationpb.New(time.Hour)}
	}
	relaxed := ledgerdv1.Policy_POLICY_RELAXED
	cases := []struct {
		name  string
		call  func() error
		code  connect.Code
		field string
	}{
		{"unknown policy", func() error { return create(&ledgerdv1.Resource{Name: "x", Capacity: 1, Policy: 9}) }, connect.CodeInvalidArgument, "resource.policy"},
		{"v* above 1", func() error {
			return create(&ledgerdv1.Resource{Name: "x", Capacity: 1, Policy: relaxed, MinSuccessPermille: 1001})
		}, connect.CodeInvalidArgument, "resource.min_success_permille"},
		{"v* without RELAXED", func() error {
			return create(&ledgerdv1.Resource{Name: "x", Capacity: 1, Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE, MinSuccessPermille: 800})
		}, connect.CodeInvalidArgument, "resource.min_success_permille"},
		{"max pushes without MOVE_VARIABLE", func() error {
			return create(&ledgerdv1.Resource{Name: "x", Capacity: 1, Policy: relaxed, MaxPushes: 3})
		}, connect.CodeInvalidArgument, "resource.max_pushes"},
		{"max pushes too large", func() error {
			return setPolicy(ops, &ledgerdv1.SetPolicyRequest{Name: "batch", Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE, MaxPushes: 1 << 20})
		}, connect.CodeInvalidArgument, "max_pushes"},
		{"set policy without a name", func() error { return setPolicy(ops, &ledgerdv1.SetPolicyRequest{Policy: relaxed}) }, connect.CodeInvalidArgument, "name"},
		{"set policy of an unknown resource", func() error { return setPolicy(ops, &ledgerdv1.SetPolicyRequest{Name: "tpu", Policy: relaxed}) }, connect.CodeNotFound, ""},
		{"tenant sets a policy", func() error { return setPolicy(acme, &ledgerdv1.SetPolicyRequest{Name: "batch", Policy: relaxed}) }, connect.CodePermissionDenied, ""},
		{"job without a resource", func() error { r := okJob(); r.Resource = ""; return job(r) }, connect.CodeInvalidArgument, "resource"},
		{"job on an unknown resource", func() error { r := okJob(); r.Resource = "tpu"; return job(r) }, connect.CodeNotFound, ""},
		{"job amount zero", func() error { r := okJob(); r.Amount = 0; return job(r) }, connect.CodeInvalidArgument, "amount"},
		{"job larger than the resource", func() error { r := okJob(); r.Amount = 11; return job(r) }, connect.CodeInvalidArgument, "amount"},
		{"job without a duration", func() error { r := okJob(); r.Duration = nil; return job(r) }, connect.CodeInvalidArgument, "duration"},
		{"job with a bad id", func() error { r := okJob(); r.Id = "has space"; return job(r) }, connect.CodeInvalidArgument, "id"},
		{"job with a reserved id", func() error { r := okJob(); r.Id = "r-1"; return job(r) }, connect.CodeInvalidArgument, "id"},
		{"modify a variable job", func() error {
			_, err := acme.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{Id: "j1", Shape: shape("batch", 2, time.Hour, 3*time.Hour, 0)}))
			return err
		}, connect.CodeInvalidArgument, "id"},
		{"duplicate job id", func() error { r := okJob(); r.Id = "j1"; return job(r) }, connect.CodeAlreadyExists, ""},
		{"multi-part reservation on a policy resource", func() error {
			sh := shape("batch", 1, time.Hour, 0, 0)
			sh.Parts = append(sh.Parts, &ledgerdv1.ResourceAmount{Resource: "cpu", Amount: 1})
			_, err := acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: sh}))
			return err
		}, connect.CodeInvalidArgument, "shape.parts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { refusal(t, ops, tc.call, tc.code, tc.field) })
	}
}
