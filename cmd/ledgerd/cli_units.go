package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/hostlist"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// Resources made of named units: `resources create NAME -nodes 'n[1-64]'`,
// `resources unit-down NAME UNIT -to ...`, `resources unit-up NAME ID`,
// `resources units NAME -add 'n[65-68]' -remove n3`,
// and the UNITS columns of the tables.

// unitFlags are the unit flags of `resources create`.
type unitFlags struct {
	nodes  string
	policy string
}

func (u *unitFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.nodes, "nodes", "", "the resource's units (nodes) as a Slurm-style hostlist, e.g. 'n[1-64]'; then an amount counts whole units and every booking names its units (-capacity is their number)")
	fs.StringVar(&u.policy, "unit-policy", "", "with -nodes: what admission does when enough units are free in sum but no set of units for the whole window: remap (move bookings that have not started; default) or refuse")
}

// spec returns the unit policy, or an error for an unknown one or one
// given without -nodes.
func (u *unitFlags) spec() (ledgerdv1.UnitPolicy, error) {
	if u.policy != "" && u.nodes == "" {
		return 0, fmt.Errorf("-unit-policy applies to a resource with -nodes only")
	}
	switch u.policy {
	case "":
		return ledgerdv1.UnitPolicy_UNIT_POLICY_UNSPECIFIED, nil
	case "remap":
		return ledgerdv1.UnitPolicy_UNIT_POLICY_REMAP, nil
	case "refuse":
		return ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE, nil
	}
	return 0, fmt.Errorf("-unit-policy: unknown policy %q (remap, refuse)", u.policy)
}

// create creates r, with the hostlist's units when -nodes was given.
func (u *unitFlags) create(ctx context.Context, c *client.Client, r *ledgerdv1.Resource) (*ledgerdv1.Resource, error) {
	if u.nodes == "" {
		return c.CreateResource(ctx, r)
	}
	return c.CreateResourceNodes(ctx, r, u.nodes)
}

// positionals takes up to n leading positional arguments so that flags
// may follow them.
func positionals(args []string, n int) ([]string, []string) {
	var pos []string
	for len(pos) < n && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	return pos, args
}

func resourcesUnitDown(args []string) int {
	pos, args := positionals(args, 2)
	fs, cf := newFlagSet("resources unit-down", "NAME UNIT")
	var from, to time.Time
	fs.Var(&timeFlag{&from}, "from", "start of the window (default: now)")
	fs.Var(&timeFlag{&to}, "to", "end of the window (required)")
	id := fs.String("id", "", "the window's id (default: assigned by the ledger)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 2 {
		return usageErr(fs, "want a resource name and a unit")
	}
	if to.IsZero() {
		return usageErr(fs, "-to is required")
	}
	req := &ledgerdv1.UnitDownRequest{Name: pos[0], Unit: pos[1], To: timestamppb.New(to), Id: *id}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	return cf.withClient("resources unit-down", func(ctx context.Context, c *client.Client) error {
		out, err := c.UnitDown(ctx, req)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(out)
			return nil
		}
		fmt.Fprintf(cliOut, "unit %s of %s down from %s to %s (window %s)\n", pos[1], pos[0], fmtTime(windowOf(out.Resource, out.Id).GetStart()), fmtTime(req.To), out.Id)
		printResources(false, out.Resource)
		return nil
	})
}

// resourcesUnits adds units to and removes units from a resource with
// units: `resources units NAME -add 'n[65-68]' -remove n3`.
func resourcesUnits(args []string) int {
	pos, args := positionals(args, 1)
	fs, cf := newFlagSet("resources units", "NAME")
	add := fs.String("add", "", "units to add, as a hostlist, e.g. 'n[65-68]'")
	remove := fs.String("remove", "", "units to remove, as a hostlist; bookings on them that have not started move to spare units")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 1 {
		return usageErr(fs, "want a resource name")
	}
	if *add == "" && *remove == "" {
		return usageErr(fs, "give -add, -remove or both")
	}
	return cf.withClient("resources units", func(ctx context.Context, c *client.Client) error {
		r, err := c.ChangeUnits(ctx, pos[0], *add, *remove)
		if err == nil {
			printResources(cf.json, r)
		}
		return err
	})
}

// windowOf returns the down window id of r (nil if none).
func windowOf(r *ledgerdv1.Resource, id string) *ledgerdv1.UnitWindow {
	for _, w := range r.GetUnitDowns() {
		if w.GetId() == id {
			return w
		}
	}
	return nil
}

func resourcesUnitUp(args []string) int {
	pos, args := positionals(args, 2)
	fs, cf := newFlagSet("resources unit-up", "NAME ID")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 2 {
		return usageErr(fs, "want a resource name and a down window's id")
	}
	return cf.withClient("resources unit-up", func(ctx context.Context, c *client.Client) error {
		r, err := c.UnitUp(ctx, &ledgerdv1.UnitUpRequest{Name: pos[0], Id: pos[1]})
		if err == nil {
			printResources(cf.json, r)
		}
		return err
	})
}

// resourceUnits is the UNITS cell of a resource: its units as a hostlist
// and its down windows, "-" without units.
func resourceUnits(r *ledgerdv1.Resource) string {
	if len(r.GetUnits()) == 0 {
		return "-"
	}
	s := hostlist.Compress(r.GetUnits())
	if r.GetUnitPolicy() == ledgerdv1.UnitPolicy_UNIT_POLICY_REFUSE {
		s += " (refuse)"
	}
	for _, w := range r.GetUnitDowns() {
		s += fmt.Sprintf("; %s down %s..%s [%s]", w.GetUnit(), fmtTime(w.GetStart()), fmtTime(w.GetEnd()), w.GetId())
	}
	return s
}

// anyUnits reports whether some resource has units.
func anyUnits(rs []*ledgerdv1.Resource) bool {
	for _, r := range rs {
		if len(r.GetUnits()) > 0 {
			return true
		}
	}
	return false
}

// reservationUnits is the UNITS cell of a reservation: its units as a
// hostlist ("-" without), and those of a pending new shape after "->".
func reservationUnits(r *ledgerdv1.Reservation) string {
	s := "-"
	if len(r.GetUnits()) > 0 {
		s = hostlist.Compress(r.GetUnits())
	}
	if p := r.GetPending(); p != nil && len(p.GetUnits()) > 0 {
		s += "->" + hostlist.Compress(p.GetUnits())
	}
	return s
}

// anyReservationUnits reports whether some reservation names units.
func anyReservationUnits(rs []*ledgerdv1.Reservation) bool {
	for _, r := range rs {
		if len(r.GetUnits()) > 0 || len(r.GetPending().GetUnits()) > 0 {
			return true
		}
	}
	return false
}

// partsWithUnits is the PARTS cell of an event: the parts, and the units
// after ":" when the reservation names any.
func partsWithUnits(r *ledgerdv1.Reservation) string {
	if len(r.GetUnits()) == 0 {
		return partsString(r.GetParts())
	}
	return partsString(r.GetParts()) + ":" + hostlist.Compress(r.GetUnits())
}
