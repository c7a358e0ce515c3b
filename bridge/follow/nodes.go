package follow

import (
	"context"
	"fmt"
	"slices"

	"github.com/ledgerd/ledgerd/bridge"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Following the partition's nodes: with Config.Partition set, every
// round compares the partition's node list with the resource's units and
// proposes the difference to the ledger (ledger.UnitLedger.ChangeUnits):
// nodes that joined become units, units whose node left are removed. The
// ledger decides: a removal moves the bookings on the unit that have not
// started to spare units (the reconcile of the same round then updates
// their Slurm reservations), and refuses when one has started, has no
// spare, or the unit policy is REFUSE. A refused removal is logged,
// counted (ledgerd_bridge_unit_changes_total{result="refused"}) and
// proposed again next round; the additions of the round go in anyway.
// An empty node list is never followed: it is more likely a misread
// partition than one without nodes, and the ledger keeps at least one
// unit anyway.

// UnitSets is what the follower needs to change the resource's units.
type UnitSets interface {
	ChangeUnits(ctx context.Context, w ledger.Write, name string, add, remove []string) (*ledgerdv1.Resource, error)
}

// UnitRefusal is a unit change the ledger refused, and why.
type UnitRefusal struct {
	Add, Remove []string
	Err         error
}

// nodeDiff returns the partition's nodes the resource lacks and the
// resource's units the partition lacks, each sorted.
func nodeDiff(units []string, nodes []bridge.Node) (add, remove []string) {
	inPart := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		inPart[n.Name] = true
	}
	have := make(map[string]bool, len(units))
	for _, u := range units {
		have[u] = true
		if !inPart[u] {
			remove = append(remove, u)
		}
	}
	for n := range inPart {
		if !have[n] {
			add = append(add, n)
		}
	}
	slices.Sort(add)
	slices.Sort(remove)
	return add, remove
}

// syncUnits makes the resource's units follow the partition's nodes and
// returns the resource as the rest of the round must see it. It tries
// the whole change first; when the ledger refuses it, the additions
// alone and then each removal alone, so that what can change does.
func (f *Follower) syncUnits(ctx context.Context, res *ledgerdv1.Resource, nodes []bridge.Node) (_ *ledgerdv1.Resource, added, removed int, refused []UnitRefusal, err error) {
	if f.sets == nil || len(nodes) == 0 {
		return res, 0, 0, nil, nil
	}
	add, remove := nodeDiff(res.GetUnits(), nodes)
	if len(add) == 0 && len(remove) == 0 {
		return res, 0, 0, nil, nil
	}
	w := ledger.Write{Tenant: f.cfg.Writer, Operator: true}
	try := func(add, remove []string) (bool, error) {
		out, err := f.sets.ChangeUnits(ctx, w, res.GetName(), add, remove)
		switch {
		case err == nil:
			res = out
			added += len(add)
			removed += len(remove)
			f.log.Info("bridge: units follow the partition", "partition", f.cfg.Partition, "added", add, "removed", remove)
			return true, nil
		case isRefusal(err):
			refused = append(refused, UnitRefusal{Add: add, Remove: remove, Err: err})
			f.log.Warn("bridge: the ledger refused a unit change; retried next round", "partition", f.cfg.Partition,
				"added", add, "removed", remove, "err", err)
			return false, nil
		}
		return false, fmt.Errorf("bridge round: units of %s from partition %s: %w", res.GetName(), f.cfg.Partition, err)
	}
	ok, err := try(add, remove)
	if err != nil || ok || len(add)+len(remove) == 1 {
		return res, added, removed, refused, err
	}
	// Refused as a whole: keep what can change. The whole refusal is
	// not counted twice.
	refused = refused[:0]
	if len(add) > 0 {
		if _, err := try(add, nil); err != nil {
			return res, added, removed, refused, err
		}
	}
	for _, u := range remove {
		if _, err := try(nil, []string{u}); err != nil {
			return res, added, removed, refused, err
		}
	}
	return res, added, removed, refused, nil
}
