package replicated

import (
	"context"
	"errors"
	"strings"
	"testing"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// TestMaterializationNeedsVersion4: a cluster where some server applies
// only envelope version 3 refuses a materialization record as unavailable
// (mid-upgrade) with a clear error and proposes nothing.
func TestMaterializationNeedsVersion4(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	vl := &versionedLog{fakeLog: fl, common: 3}
	l := New(vl, fl.f)
	err := l.SetMaterialization(ctx, op(), []ledger.MaterializationUpdate{{ID: "r1", State: ledgerdv1.MaterializationState_MATERIALIZATION_STATE_PENDING}})
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, ErrMidUpgrade) || !strings.Contains(err.Error(), "needs version 4") {
		t.Fatalf("record at common version 3: %v, want unavailable (mid-upgrade, needs version 4)", err)
	}
	if len(fl.cmds) != 0 {
		t.Fatalf("%d commands proposed to a cluster that cannot apply them", len(fl.cmds))
	}
}

// TestMaterializationThroughLedger: a record comes back on Get, List and
// as an EVENT_TYPE_MATERIALIZATION event; a bad record is a field error.
func TestMaterializationThroughLedger(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	l := New(fl, fl.f)
	if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: "pair", Unit: "nodes", Units: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{
		Parts: []ledger.Part{{Resource: "pair", Amount: 1}}, Duration: 60_000, NotBefore: t0 + 10_000, Deadline: t0 + 70_000}})
	if err != nil {
		t.Fatal(err)
	}
	up := ledger.MaterializationUpdate{ID: r.GetId(), State: ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED,
		Name: "ledgerd-" + r.GetId(), Units: r.GetUnits(), Start: t0 + 10_000, End: t0 + 70_000}
	if err := l.SetMaterialization(ctx, op(), []ledger.MaterializationUpdate{up}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, r.GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	m := got.GetMaterialization()
	if m.GetState() != ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED || m.GetName() != up.Name ||
		m.GetStart().AsTime().UnixMilli() != up.Start || m.GetEnd().AsTime().UnixMilli() != up.End || m.GetVersion() == 0 {
		t.Fatalf("record on Get: %v", m)
	}
	evs, err := l.History(ctx, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.GetType() != ledgerdv1.EventType_EVENT_TYPE_MATERIALIZATION || last.GetReservation().GetMaterialization() == nil {
		t.Fatalf("last event %v", last)
	}
	var fe *ledger.FieldError
	bad := []ledger.MaterializationUpdate{{ID: r.GetId()}}
	if err := l.SetMaterialization(ctx, op(), bad); !errors.As(err, &fe) || !strings.Contains(fe.Field, "state") {
		t.Fatalf("record without a state: %v", err)
	}
}
