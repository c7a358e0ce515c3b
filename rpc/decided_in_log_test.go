package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// Decisions the state machine takes at apply time, one log entry each.

// TestModifyRaceDecidedByTheLog: two modifications race for the first
// free slot of the same window. The state machine picks each start when
// it applies the entry, so the second gets the next slot of its window;
// an edge that picked the start first would have sent both to the same
// slot and refused the second although its window had room.
func TestModifyRaceDecidedByTheLog(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	now := s.Clock.Now()
	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(d)) }
	gpu := func(n int64, start, dur time.Duration) *ledgerdv1.Shape {
		return &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: n}}, Duration: durationpb.New(dur), ExactStart: at(start)}
	}
	// gpu (8) has 6 free for an hour only at +2h and at +4h inside
	// [+1h, +6h): walls of 4 over [+1h, +2h), [+3h, +4h) and [+5h, +6h).
	for _, h := range []time.Duration{1, 3, 5} {
		must[*connect.Response[ledgerdv1.ReserveResponse]](t)(ops.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: gpu(4, h*time.Hour, time.Hour)})))
	}
	var ids []string
	for range 2 {
		r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: gpu(1, 10*time.Hour, time.Hour)})))
		ids = append(ids, r.Msg.Reservation.Id)
	}
	window := &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: 6}}, Duration: durationpb.New(time.Hour), NotBefore: at(time.Hour), Deadline: at(6 * time.Hour)}
	var wg sync.WaitGroup
	starts := make([]time.Time, 2)
	errs := make([]error, 2)
	for i, id := range ids {
		wg.Go(func() {
			r, err := acme.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{Id: id, Shape: window}))
			if errs[i] = err; err == nil {
				starts[i] = r.Msg.Reservation.Pending.Start.AsTime()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("modification %d of two racing for one window with two slots: %v", i, err)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if !starts[0].Equal(now.Add(2*time.Hour)) || !starts[1].Equal(now.Add(4*time.Hour)) {
		t.Fatalf("starts %v, want +2h and +4h", starts)
	}
	// A third finds no slot left in the window: rejected, not invalid.
	r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: gpu(1, 12*time.Hour, time.Hour)})))
	_, err := acme.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{Id: r.Msg.Reservation.Id, Shape: window}))
	if rej, ok := rpc.Rejection(err); !ok || connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("third modification: %v (rejection %v)", err, rej)
	}
}

// TestForcedDeleteAllOrNothingAcrossLeaderLoss deletes a resource that
// carries many reservations, with force, and stops the leader while the
// delete is under way: before the request reaches it (sent once, to it
// alone), as soon as it has applied the entry, or at whatever moment a
// retrying client happens to be at. Whatever the timing, the survivors
// hold either all of it (the resource and every reservation live) or
// none of it (the resource gone and every reservation released), never
// half, and they agree.
func TestForcedDeleteAllOrNothingAcrossLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Raft clusters")
	}
	for _, mode := range []string{"sent once", "stopped at apply", "retried"} {
		t.Run(mode, func(t *testing.T) { forcedDeleteAcrossLeaderLoss(t, mode) })
	}
}

func forcedDeleteAcrossLeaderLoss(t *testing.T, mode string) {
	ctx := context.Background()
	c := agenttest.NewCluster(t, 3, rpc.Options{Auth: agenttest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), agenttest.TokenOps)
	if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "lab", Capacity: 1000}); err != nil {
		t.Fatal(err)
	}
	const n = 120
	shape := func(i int) *ledgerdv1.Shape {
		return &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "lab", Amount: 1}}, Duration: durationpb.New(time.Hour),
			ExactStart: timestamppb.New(time.Now().Add(time.Duration(1+i%5) * time.Hour))}
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			var r *ledgerdv1.Reservation
			var err error
			if i%3 == 0 {
				r, err = ops.Hold(ctx, &ledgerdv1.HoldRequest{Shape: shape(i), HoldTtl: durationpb.New(time.Hour)})
			} else {
				r, err = ops.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: shape(i)})
			}
			if err != nil {
				errs <- fmt.Errorf("booking %d: %w", i, err)
				return
			}
			ids[i] = r.Id
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	leader := c.WaitLeader(15 * time.Second)
	sender := ops
	if mode == "sent once" {
		var err error
		if sender, err = client.New([]string{leader.Addr}, client.Options{Token: agenttest.TokenOps, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	deleted := make(chan error, 1)
	start := time.Now()
	go func() { deleted <- sender.DeleteResource(ctx, "lab", true) }()
	if mode == "stopped at apply" {
		waitFSM(t, leader.FSM, 30*time.Second, "the leader applies the forced delete", func() bool {
			_, ok := leader.FSM.Resource("lab")
			return !ok
		})
	}
	c.Stop(leader)
	err := <-deleted
	t.Logf("forced delete, leader stopped: %v after %s", err, time.Since(start).Round(time.Millisecond))

	// Read every survivor once it has applied what the new leader has.
	next := c.WaitLeader(30 * time.Second)
	want := next.FSM.AppliedIndex()
	for _, s := range c.Servers {
		if s != leader {
			waitFSM(t, s.FSM, 10*time.Second, fmt.Sprintf("%s applies index %d", s.Name, want), func() bool { return s.FSM.AppliedIndex() >= want })
		}
	}
	var outcome string
	for _, s := range c.Servers {
		if s == leader {
			continue
		}
		_, exists := s.FSM.Resource("lab")
		live, released := 0, 0
		for _, id := range ids {
			r, ok := s.FSM.Get(id)
			if !ok {
				t.Fatalf("%s: reservation %s missing", s.Name, id)
			}
			switch r.GetState() {
			case fsmv1.Reservation_STATE_HELD, fsmv1.Reservation_STATE_COMMITTED:
				live++
			case fsmv1.Reservation_STATE_ABORTED, fsmv1.Reservation_STATE_CANCELLED:
				released++
			}
		}
		got := fmt.Sprintf("resource exists %v, %d live, %d released", exists, live, released)
		switch {
		case exists && live == n, !exists && released == n:
		default:
			t.Fatalf("%s: half a forced delete: %s", s.Name, got)
		}
		if outcome != "" && outcome != got {
			t.Fatalf("survivors disagree: %s vs %s", outcome, got)
		}
		outcome = got
	}
	t.Logf("survivors: %s", outcome)
	all := fmt.Sprintf("resource exists false, 0 live, %d released", n)
	if (err == nil || mode == "stopped at apply") && outcome != all {
		t.Fatalf("the delete was applied but the survivors hold %s", outcome)
	}
}

// TestRowPastTheEndOfTimeStillReads: a ledger restored from a snapshot
// that holds a row booked past 9999-12-31T23:59:59.999Z (as a release
// that did not refuse such bookings stored it) answers every read over
// plain JSON, with the row's times clamped.
func TestRowPastTheEndOfTimeStillReads(t *testing.T) {
	ctx := context.Background()
	s, _ := newSite(t, agenttest.Options{})
	// What an older edge proposed: a version 1 hold from late 9999.
	late := &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Version: 1, Owner: "acme", IdempotencyKey: "late",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: "late",
			Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 1}}, DurationMillis: 7_200_000, NotBeforeMillis: fsm.MaxTimeMillis - 3_600_000}}}
	b, err := fsm.Encode(late)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Log.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Snapshot the ledger and restore it, as a new node would.
	snap, err := s.FSM.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if err := s.FSM.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.FSM.Get("late"); r.GetEndMillis() <= fsm.MaxTimeMillis {
		t.Fatalf("the restored row does not end past 9999: %v", r)
	}
	post := func(token, proc, body string) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URLs[0]+proc, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !json.Valid(out) {
			t.Fatalf("%s %s: HTTP %d: %s", proc, body, resp.StatusCode, out)
		}
		return string(out)
	}
	acme, ops := agenttest.TokenAcme, agenttest.TokenOps
	got := post(acme, rsv+"Get", `{"id": "late"}`)
	if !strings.Contains(got, `"9999-12-31T23:59:59.999Z"`) {
		t.Errorf("Get: the end is not clamped to the end of time: %s", got)
	}
	post(acme, rsv+"List", `{}`)
	post(ops, rsv+"List", `{"states": ["RESERVATION_STATE_COMMITTED"]}`)
	post(acme, rsv+"History", `{}`)
	post(acme, rsv+"History", `{"reservation_id": "late"}`)
	post(acme, rsv+"Availability", `{"resource": "gpu", "to": "9999-12-31T23:59:59.999Z"}`)
	post(acme, rsv+"Find", `{"shape": {"parts": [{"resource": "gpu", "amount": 8}], "duration": "3600s", "not_before": "9999-12-31T20:00:00Z"}}`)
	post(acme, rsv+"Batch", `{"operations": [{"get": {"id": "late"}}]}`)
	post(ops, rsc+"List", `{}`)
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }
