package replicated

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// TestLimitsNeedVersion4: while any server applies only version 3 (a
// rolling upgrade), setting limits and deciding approvals are refused as
// unavailable, naming the version, and nothing is proposed; once every
// server applies version 4 they go through.
func TestLimitsNeedVersion4(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	vl := &versionedLog{fakeLog: fl, common: 3}
	l := New(vl, fl.f)
	seed(t, l)
	before := len(fl.cmds)
	_, err := l.SetLimits(ctx, ledger.LimitsArgs{Write: op(), Tenant: "t", Resource: "cpu", Spec: &ledger.LimitSpec{MaxUnits: 3}})
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, ErrMidUpgrade) || !strings.Contains(err.Error(), "needs version 4, every server applies 3") {
		t.Fatalf("set limits in a version 3 cluster: %v", err)
	}
	if _, err := l.Decide(ctx, op(), "x", true, ""); !errors.Is(err, ErrMidUpgrade) {
		t.Fatalf("approve in a version 3 cluster: %v", err)
	}
	if len(fl.cmds) != before {
		t.Fatal("a version 4 command was proposed to a version 3 cluster")
	}

	vl.common = 4
	lim, err := l.SetLimits(ctx, ledger.LimitsArgs{Write: op(), Tenant: "t", Resource: "cpu", Spec: &ledger.LimitSpec{MaxUnits: 7, ApprovalAboveUnits: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if lim.GetLimits().GetMaxUnits() != 7 || lim.GetVersion() == 0 {
		t.Fatalf("stored entry %v", lim)
	}
	if v := fl.cmds[len(fl.cmds)-1].GetVersion(); v != 4 {
		t.Fatalf("written as version %d", v)
	}
	// seed booked 5 units of cpu at t0+1h for t; 3 more is over 7.
	shape := ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 3}}, Duration: 60_000, NotBefore: t0 + 3_600_000, Deadline: t0 + 3_660_000}
	_, _, err = l.Hold(ctx, ledger.HoldArgs{Write: ledger.Write{Tenant: "t", IdempotencyKey: "h1"}, Commit: true, Shape: shape})
	var le *ledger.LimitError
	if !errors.As(err, &le) || le.Detail.GetLimit() != "max_units" || le.Detail.GetUsage() != 5 || le.Detail.GetFits() != 2 || le.Detail.GetUnit() != "units" {
		t.Fatalf("over the limit: %v", err)
	}
	if want := `tenant "t" on "cpu": max_units 7 units (entry t/cpu): usage 5 units + request 3 units; 2 units would fit`; le.Message != want {
		t.Fatalf("message\n%s\nwant\n%s", le.Message, want)
	}
	// Above the approval threshold: pending, then approved.
	shape.Parts[0].Amount, shape.NotBefore, shape.Deadline = 6, t0+7_200_000, ledger.NoDeadline
	r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: ledger.Write{Tenant: "t", IdempotencyKey: "h2"}, Commit: true, Shape: shape})
	if err != nil || r.GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_PENDING_APPROVAL || r.GetApprovalReason() == "" {
		t.Fatalf("pending: %v %v", r, err)
	}
	if _, err := l.Decide(ctx, ledger.Write{Tenant: "t", IdempotencyKey: "d0"}, r.GetId(), true, ""); !errors.Is(err, ledger.ErrPermission) {
		t.Fatalf("approval by the tenant: %v", err)
	}
	a, err := l.Decide(ctx, op(), r.GetId(), true, "ok")
	if err != nil || a.GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED || a.GetDecisionReason() != "ok" {
		t.Fatalf("approved: %v %v", a, err)
	}
	rows, err := l.Usage(ctx, ledger.UsageQuery{Tenant: "t"})
	if err != nil || len(rows) != 1 || rows[0].GetBookedUnitSeconds() != 5*60+6*60 {
		t.Fatalf("usage %v %v", rows, err)
	}
	evs, err := l.History(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range evs {
		if e.GetType() == ledgerdv1.EventType_EVENT_TYPE_LIMITS_CHANGED {
			seen = append(seen, "limits:"+e.GetLimit().GetTenant())
		} else if strings.Contains(e.GetAction(), "approv") {
			seen = append(seen, e.GetAction())
		}
	}
	if got := strings.Join(seen, " "); got != "limits:t approval_requested approved" {
		t.Fatalf("events %q", got)
	}
}

// TestUsageSaysWhenSaturated: a resource counted in large units (bytes, say)
// passes the int64 unit-milliseconds of the report within seconds; the
// report then says its figure is a lower bound instead of passing off the
// int64 maximum as the sum, and rows that did not pass it do not say so.
func TestUsageSaysWhenSaturated(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	seed(t, l)
	const huge = int64(1) << 62
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "bytes", Capacity: huge}); err != nil {
		t.Fatal(err)
	}
	// 2^62 units for 3 s: 1.4e22 unit-milliseconds, past 2^63-1.
	if _, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "bytes", Amount: huge}}, Duration: 3_000, NotBefore: t0 + 3_600_000, Deadline: ledger.NoDeadline}}); err != nil {
		t.Fatal(err)
	}
	rows, err := l.Usage(ctx, ledger.UsageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*ledgerdv1.UsageRow{}
	for _, r := range rows {
		got[r.GetResource()] = r
	}
	if b := got["bytes"]; b == nil || !b.GetSaturated() || b.GetBookedUnitSeconds() != math.MaxInt64/1000 {
		t.Fatalf("bytes row %v: want saturated with booked %d", b, int64(math.MaxInt64/1000))
	}
	if c := got["cpu"]; c == nil || c.GetSaturated() || c.GetBookedUnitSeconds() != 5*60 {
		t.Fatalf("cpu row %v: want 300 unit-seconds, not saturated", c)
	}
}
