package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
)

// twoSites starts sites A and B (each its own ledger) and a CoRequest for
// 4 GPUs on each for one hour from t0+1h.
func twoSites(t *testing.T) (a, b *agenttest.Site, ca, cb *Client, req CoRequest) {
	t.Helper()
	a, b = newSite(t, 1), newSite(t, 1)
	ca, cb = newClient(t, a, agenttest.TokenAcme), newClient(t, b, agenttest.TokenAcme)
	parts := []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: 4}}
	req = CoRequest{
		Sites:     []SiteRequest{{Site: "A", Client: ca, Parts: parts}, {Site: "B", Client: cb, Parts: parts}},
		Duration:  time.Hour,
		NotBefore: t0.Add(time.Hour),
		HoldTTL:   time.Minute,
	}
	return a, b, ca, cb, req
}

// states lists the states of every reservation a client's tenant has.
func states(t *testing.T, c *Client) []ledgerdv1.ReservationState {
	t.Helper()
	all, err := c.ListAll(context.Background(), &ledgerdv1.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledgerdv1.ReservationState
	for _, r := range all {
		out = append(out, r.State)
	}
	return out
}

func setHooks(t *testing.T, beforeHold, beforeCommit func()) {
	testHookBeforeHold, testHookBeforeCommit = beforeHold, beforeCommit
	t.Cleanup(func() { testHookBeforeHold, testHookBeforeCommit = nil, nil })
}

const (
	held      = ledgerdv1.ReservationState_RESERVATION_STATE_HELD
	committed = ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED
	aborted   = ledgerdv1.ReservationState_RESERVATION_STATE_ABORTED
	expired   = ledgerdv1.ReservationState_RESERVATION_STATE_EXPIRED
	cancelled = ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED
)

func oneState(t *testing.T, c *Client, site string, want ledgerdv1.ReservationState) {
	t.Helper()
	got := states(t, c)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("site %s: states %v, want [%v]", site, got, want)
	}
}

func TestCoAllocateCommitsEverywhereAtOneStart(t *testing.T) {
	_, _, ca, cb, req := twoSites(t)
	// B is busy during the first hour: the common start must move to t0+2h.
	if _, err := cb.Reserve(context.Background(), &ledgerdv1.ReserveRequest{Shape: gpuShape(6, time.Hour)}); err != nil {
		t.Fatal(err)
	}
	res, err := CoAllocate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := t0.Add(2 * time.Hour)
	if !res.Start.Equal(want) {
		t.Fatalf("start = %v, want %v", res.Start, want)
	}
	for site, r := range res.Reservations {
		if r.State != committed || !r.Start.AsTime().Equal(want) {
			t.Fatalf("site %s: %v", site, r)
		}
	}
	oneState(t, ca, "A", committed)
}

func TestCoAllocateNoRoomAnywhereBooksNothing(t *testing.T) {
	_, _, ca, cb, req := twoSites(t)
	if _, err := cb.Reserve(context.Background(), &ledgerdv1.ReserveRequest{Shape: gpuShape(6, 3*time.Hour)}); err != nil {
		t.Fatal(err)
	}
	req.Deadline = t0.Add(3 * time.Hour)
	_, err := CoAllocate(context.Background(), req)
	var ce *CoAllocError
	if !errors.As(err, &ce) || ce.Phase != "negotiate" || ce.Site != "B" || connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("err = %v", err)
	}
	if rej, ok := rpc.Rejection(err); !ok || rej.EarliestStart == nil || !rej.EarliestStart.AsTime().Equal(t0.Add(4*time.Hour)) {
		t.Fatalf("rejection detail = %v, %v", rej, ok)
	}
	if got := states(t, ca); len(got) != 0 {
		t.Fatalf("site A has %v after a failed negotiation", got)
	}
}

func TestCoAllocateSiteDownBeforeAnything(t *testing.T) {
	_, b, ca, _, req := twoSites(t)
	b.Stop(0)
	_, err := CoAllocate(context.Background(), req)
	var ce *CoAllocError
	if !errors.As(err, &ce) || ce.Site != "B" {
		t.Fatalf("err = %v", err)
	}
	if got := states(t, ca); len(got) != 0 {
		t.Fatalf("site A has %v with B down", got)
	}
}

func TestCoAllocateSiteDownAtHoldAbortsTheOthers(t *testing.T) {
	_, b, ca, _, req := twoSites(t)
	setHooks(t, func() { b.Log.Down.Store(true) }, nil)
	_, err := CoAllocate(context.Background(), req)
	var ce *CoAllocError
	if !errors.As(err, &ce) || ce.Phase != "hold" || ce.Site != "B" || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("err = %v", err)
	}
	if len(ce.Released) != 1 || ce.Released[0] != "A" || len(ce.Stranded) != 0 {
		t.Fatalf("cleanup: released %v stranded %v", ce.Released, ce.Stranded)
	}
	oneState(t, ca, "A", aborted)
}

func TestCoAllocateHoldExpiresMidwayCompensates(t *testing.T) {
	a, b, ca, cb, req := twoSites(t)
	// B's hold expires between the phases; A's commit goes through and must
	// then be cancelled.
	setHooks(t, nil, func() {
		b.Clock.Advance(2 * req.HoldTTL)
		if err := b.Log.Tick(); err != nil {
			t.Error(err)
		}
	})
	_, err := CoAllocate(context.Background(), req)
	var ce *CoAllocError
	if !errors.As(err, &ce) || ce.Phase != "commit" || ce.Site != "B" || connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("err = %v", err)
	}
	if len(ce.Stranded) != 0 {
		t.Fatalf("stranded %v", ce.Stranded)
	}
	oneState(t, ca, "A", cancelled)
	oneState(t, cb, "B", expired)
	// Nothing is booked on either site afterwards.
	for name, s := range map[string]*agenttest.Site{"A": a, "B": b} {
		f, err := newClient(t, s, agenttest.TokenAcme).Find(context.Background(), &ledgerdv1.Shape{
			Parts: req.Sites[0].Parts, Duration: durationpb.New(time.Hour), ExactStart: timestamppb.New(t0.Add(time.Hour)),
		})
		if err != nil || !f.Fits {
			t.Fatalf("site %s: slot still taken: %v %v", name, f, err)
		}
	}
}

func TestCoAllocateSiteLostAtCommitHoldDiesByTTL(t *testing.T) {
	_, b, ca, cb, req := twoSites(t)
	setHooks(t, nil, func() { b.Log.Down.Store(true) })
	_, err := CoAllocate(context.Background(), req)
	var ce *CoAllocError
	if !errors.As(err, &ce) || ce.Phase != "commit" || ce.Site != "B" {
		t.Fatalf("err = %v", err)
	}
	if _, ok := ce.Stranded["B"]; !ok {
		t.Fatalf("B should be reported stranded: %v", ce)
	}
	oneState(t, ca, "A", cancelled)
	// B comes back; its hold is still there until the TTL, then it expires.
	b.Log.Down.Store(false)
	oneState(t, cb, "B", held)
	b.Clock.Advance(2 * req.HoldTTL)
	if err := b.Log.Tick(); err != nil {
		t.Fatal(err)
	}
	oneState(t, cb, "B", expired)
}

func TestCoAllocateValidates(t *testing.T) {
	_, _, ca, _, _ := twoSites(t)
	parts := []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: 1}}
	for name, req := range map[string]CoRequest{
		"no sites":       {Duration: time.Hour},
		"duplicate site": {Duration: time.Hour, Sites: []SiteRequest{{Site: "A", Client: ca, Parts: parts}, {Site: "A", Client: ca, Parts: parts}}},
		"no client":      {Duration: time.Hour, Sites: []SiteRequest{{Site: "A", Parts: parts}}},
		"no parts":       {Duration: time.Hour, Sites: []SiteRequest{{Site: "A", Client: ca}}},
		"no duration":    {Sites: []SiteRequest{{Site: "A", Client: ca, Parts: parts}}},
	} {
		if _, err := CoAllocate(context.Background(), req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
