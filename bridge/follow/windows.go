package follow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Unit windows from Slurm: a node that Slurm reports unusable (DOWN,
// DRAIN, FAIL, not responding) and a node inside a hand-made maintenance
// reservation (Flags=MAINT) are out of service in the ledger too, as unit
// down windows the bridge owns by their IDs:
//
//   - "slurm-node.<node>": the node is unusable; from now until it is
//     usable again (the window ends then, UnitUp). Its end is the end of
//     time, since nobody knows when the node returns.
//   - "slurm-maint.<reservation>.<node>": the node over the maintenance
//     reservation's window; ended when the reservation disappears.
//
// A window the ledger refuses (it would overbook: bookings that cannot
// move, ErrInUse) is reported (log, ledgerd_bridge_windows_refused_total,
// Report.Refused) and tried again next round.

// Window ID prefixes the bridge owns.
const (
	nodeWindowPrefix  = "slurm-node."
	maintWindowPrefix = "slurm-maint."
)

// endOfTime is the end of an open-ended node window (the ledger's last
// instant, 9999-12-31T23:59:59.999Z).
const endOfTime int64 = 253402300799999

// UnitWindows is what the follower needs to mirror windows.
type UnitWindows interface {
	UnitDown(ctx context.Context, a ledger.UnitDownArgs) (*ledgerdv1.Resource, string, error)
	UnitUp(ctx context.Context, w ledger.Write, name, id string) (*ledgerdv1.Resource, error)
}

// wantWindow is a unit window the bridge wants in the ledger.
type wantWindow struct {
	id, unit string
	from, to int64
	why      string
}

// windowID turns a Slurm name into a window ID ([A-Za-z0-9._:-]).
func windowID(prefix string, parts ...string) string {
	var sb strings.Builder
	sb.WriteString(prefix)
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte('.')
		}
		for _, c := range p {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ':' {
				sb.WriteRune(c)
			} else {
				sb.WriteByte('_')
			}
		}
	}
	s := sb.String()
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}

// wantedWindows computes the windows Slurm's state asks for: unusable
// nodes of the partition and nodes of maintenance reservations, limited
// to the resource's units.
func wantedWindows(res *ledgerdv1.Resource, nodes []bridge.Node, observed []bridge.Reservation, prefix string, now time.Time) []wantWindow {
	units := map[string]bool{}
	for _, u := range res.GetUnits() {
		units[u] = true
	}
	var out []wantWindow
	for _, n := range nodes {
		if units[n.Name] && !n.Usable() {
			why := n.State
			if len(n.Flags) > 0 {
				why += "+" + strings.Join(n.Flags, "+")
			}
			if n.Reason != "" {
				why += ": " + n.Reason
			}
			out = append(out, wantWindow{id: windowID(nodeWindowPrefix, n.Name), unit: n.Name, from: now.UnixMilli(), to: endOfTime, why: why})
		}
	}
	for _, r := range observed {
		if !r.Maintenance() || bridge.Owns(prefix, r.Name) || !r.End.After(now) {
			continue
		}
		for _, node := range r.Nodes {
			if units[node] {
				out = append(out, wantWindow{id: windowID(maintWindowPrefix, r.Name, node), unit: node,
					from: r.Start.UnixMilli(), to: r.End.UnixMilli(), why: "maintenance reservation " + r.Name})
			}
		}
	}
	slices.SortFunc(out, func(a, b wantWindow) int { return strings.Compare(a.id, b.id) })
	return slices.CompactFunc(out, func(a, b wantWindow) bool { return a.id == b.id })
}

// WindowRefusal is a window the ledger refused, and why.
type WindowRefusal struct {
	ID, Unit string
	Err      error
}

// syncWindows makes the ledger's bridge-owned unit windows of res equal
// the wanted ones: it adds the missing ones and ends those no longer
// wanted. It returns the refusals; an error only when it could not write.
func (f *Follower) syncWindows(ctx context.Context, res *ledgerdv1.Resource, want []wantWindow) (added, ended int, refused []WindowRefusal, err error) {
	if f.windows == nil {
		return 0, 0, nil, nil
	}
	w := ledger.Write{Tenant: f.cfg.Writer, Operator: true}
	have := map[string]bool{}
	for _, d := range res.GetUnitDowns() {
		if strings.HasPrefix(d.GetId(), nodeWindowPrefix) || strings.HasPrefix(d.GetId(), maintWindowPrefix) {
			have[d.GetId()] = true
		}
	}
	wanted := map[string]bool{}
	for _, x := range want {
		wanted[x.id] = true
		if have[x.id] {
			continue
		}
		_, _, err := f.windows.UnitDown(ctx, ledger.UnitDownArgs{Write: w, Name: res.GetName(), Unit: x.unit, From: x.from, To: x.to, ID: x.id})
		switch {
		case err == nil:
			added++
			f.log.Info("bridge: unit out of service in the ledger", "unit", x.unit, "window", x.id, "why", x.why)
		case isRefusal(err):
			refused = append(refused, WindowRefusal{ID: x.id, Unit: x.unit, Err: err})
			f.log.Warn("bridge: the ledger refused a unit window (it would overbook)", "unit", x.unit, "window", x.id, "why", x.why, "err", err)
		default:
			return added, ended, refused, fmt.Errorf("bridge round: unit window %s: %w", x.id, err)
		}
	}
	for _, id := range slices.Sorted(mapsKeys(have)) {
		if wanted[id] {
			continue
		}
		if _, err := f.windows.UnitUp(ctx, w, res.GetName(), id); err != nil && !isRefusal(err) {
			return added, ended, refused, fmt.Errorf("bridge round: end unit window %s: %w", id, err)
		}
		ended++
		f.log.Info("bridge: unit back in service in the ledger", "window", id)
	}
	return added, ended, refused, nil
}

// isRefusal reports whether err is the ledger's decision about the
// window (not an outage): it would overbook, or it is gone already.
func isRefusal(err error) bool {
	var fe *ledger.FieldError
	return errors.Is(err, ledger.ErrInUse) || errors.Is(err, ledger.ErrWrongState) || errors.Is(err, ledger.ErrNotFound) ||
		errors.Is(err, ledger.ErrExists) || errors.As(err, &fe)
}
