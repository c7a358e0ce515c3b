package slurm_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/bridge/slurm"
	"github.com/ledgerd/ledgerd/bridge/slurm/slurmtest"
)

var (
	chaosSteps = flag.Int("slurm.chaos", 0, "run TestChaosAgainstSlurm for this many steps (0: skip)")
	chaosSeed  = flag.Uint64("slurm.seed", 0, "seed of TestChaosAgainstSlurm (0: a fresh one, printed)")
)

// TestChaosAgainstSlurm drives the reconcile loop against a real Slurm
// while a nemesis kills (SIGKILL) and restarts slurmctld, stops it
// gracefully, deletes and edits the bridge's reservations by hand, and
// drains and resumes nodes, sometimes in the middle of a round. At every
// quiescence Slurm must hold exactly the accepted desired set with the
// desired nodes and times, no two reservations may overlap on a node, and
// the hand-made reservations must be as they were. Behind -slurm.chaos=N
// (make slurm-chaos): it takes about a second a step.
func TestChaosAgainstSlurm(t *testing.T) {
	if *chaosSteps == 0 {
		t.Skip("chaos campaign: run with -slurm.chaos=N (make slurm-chaos)")
	}
	seed := *chaosSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -slurm.seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 2))

	c := slurmtest.Start(t, slurmtest.Options{Nodes: 4})
	d := newDriver(t, c, "UTC", nil)
	base := time.Now().Truncate(time.Minute).Add(2 * time.Hour)
	c.Run(t, "scontrol", "create", "reservation", "ReservationName=handmade", "StartTime="+utc(base.Add(20*time.Hour)),
		"EndTime="+utc(base.Add(21*time.Hour)), "Nodes=n4", "Users=root")
	c.Run(t, "scontrol", "create", "reservation", "ReservationName=maint", "StartTime="+utc(base.Add(22*time.Hour)),
		"EndTime="+utc(base.Add(23*time.Hour)), "Nodes=n1,n2", "Users=root", "Flags=MAINT")
	// slurmctld saves its state every few seconds and on SIGTERM; a
	// SIGKILL loses what changed since. A graceful restart makes the
	// hand-made reservations durable before the nemesis starts, so their
	// loss would be the bridge's doing.
	c.StopController(t)
	c.StartController(t)
	hand := c.ShowReservations(t)

	nodes := c.NodeNames
	randomDesired := func() []bridge.Spec {
		var out []bridge.Spec
		for i := range 8 {
			if r.IntN(3) == 0 {
				continue
			}
			var ns []string
			for _, n := range nodes {
				if r.IntN(2) == 0 {
					ns = append(ns, n)
				}
			}
			if len(ns) == 0 {
				ns = []string{nodes[r.IntN(len(nodes))]}
			}
			start := base.Add(time.Duration(r.IntN(24*60)) * time.Minute)
			out = append(out, bridge.Spec{Name: prefix + strconv.Itoa(i), Nodes: ns, Start: start,
				End: start.Add(time.Duration(10+r.IntN(120)) * time.Minute), Users: []string{"root"}})
		}
		return out
	}

	desired := randomDesired()
	for step := 1; step <= *chaosSteps; step++ {
		if r.IntN(2) == 0 {
			desired = randomDesired()
		}
		what, undo := nemesis(t, c, r, step)
		// Sometimes the controller dies in the middle of the round.
		midRound := r.IntN(4) == 0
		var killed chan struct{}
		if midRound {
			what += ", then slurmctld killed mid-round"
			killed = make(chan struct{})
			delay := time.Duration(r.IntN(200)) * time.Millisecond
			go func() {
				defer close(killed)
				time.Sleep(delay) // a random moment inside the round
				c.KillController(t)
			}()
		}
		accepted, rounds := converge(t, c, d, desired, step, what, killed)
		check(t, c, desired, accepted, hand, step, fmt.Sprintf("%s; converged in round %d", what, rounds))
		if undo != nil {
			undo()
		}
	}
}

// nemesis does one random fault (or none), says which, and returns what
// undoes it after the step's check, if anything.
func nemesis(t *testing.T, c *slurmtest.Cluster, r *rand.Rand, step int) (string, func()) {
	owned := func() []string {
		var out []string
		for name := range c.ShowReservations(t) {
			if bridge.Owns(prefix, name) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	switch r.IntN(6) {
	case 0:
		c.KillController(t)
		c.StartController(t)
		return "slurmctld killed and restarted", nil
	case 1:
		c.StopController(t)
		c.StartController(t)
		return "slurmctld stopped and restarted", nil
	case 2:
		if o := owned(); len(o) > 0 {
			name := o[r.IntN(len(o))]
			c.Run(t, "scontrol", "delete", "ReservationName="+name)
			return "deleted " + name + " by hand", nil
		}
	case 3:
		if o := owned(); len(o) > 0 {
			name := o[r.IntN(len(o))]
			// May be refused (overlap); either way the bridge must cope.
			_, err := c.Try("scontrol", "update", "ReservationName="+name, "Nodes="+c.NodeNames[r.IntN(len(c.NodeNames))])
			return fmt.Sprintf("edited %s by hand (%v)", name, err), nil
		}
	case 4:
		n := c.NodeNames[r.IntN(len(c.NodeNames))]
		c.Run(t, "scontrol", "update", "NodeName="+n, "State=DRAIN", "Reason=chaos-step-"+strconv.Itoa(step))
		return "drained " + n, func() {
			// A controller killed since may have lost the drain: then
			// RESUME is refused as an invalid state, which is fine.
			if _, err := c.Try("scontrol", "update", "NodeName="+n, "State=RESUME"); err != nil && !strings.Contains(err.Error(), "Invalid node state") {
				t.Fatalf("resume %s: %v", n, err)
			}
		}
	}
	return "nothing", nil
}

// converge runs rounds until a round plans nothing, restarting the
// controller after a mid-round kill; it returns the accepted names and the
// number of the round that found nothing to do.
func converge(t *testing.T, c *slurmtest.Cluster, d bridge.Driver, desired []bridge.Spec, step int, what string, killed chan struct{}) ([]string, int) {
	t.Helper()
	end := time.Now().Add(deadline)
	for round := 1; ; round++ {
		if time.Now().After(end) {
			t.Fatalf("step %d (%s): no convergence within %v", step, what, deadline)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p, err := roundOnce(ctx, d, desired)
		cancel()
		if killed != nil {
			select {
			case <-killed:
				c.StartController(t)
				killed = nil
				continue
			default:
			}
		}
		if err != nil {
			t.Logf("step %d round %d: %v (retrying)", step, round, err)
			continue
		}
		if p.Converged() {
			if killed != nil {
				<-killed
				c.StartController(t)
				killed = nil
				continue
			}
			return p.Accepted, round
		}
	}
}

// roundOnce observes, plans and applies; the plan it returns converged
// only if there was nothing to do.
func roundOnce(ctx context.Context, d bridge.Driver, desired []bridge.Spec) (bridge.Plan, error) {
	observed, err := d.Reservations(ctx)
	if err != nil {
		return bridge.Plan{}, err
	}
	p := bridge.Reconcile(desired, observed, prefix, time.Now())
	if p.Converged() {
		return p, nil
	}
	results, err := bridge.Apply(ctx, d, p.Actions)
	if err != nil {
		return bridge.Plan{}, err
	}
	for _, r := range results {
		if r.Err != nil {
			return bridge.Plan{}, fmt.Errorf("%v: %w", r.Action, r.Err)
		}
	}
	return p, nil
}

// check compares Slurm (read as root, independently of the driver) with
// the accepted set.
func check(t *testing.T, c *slurmtest.Cluster, desired []bridge.Spec, accepted []string, hand map[string]map[string]string, step int, what string) {
	t.Helper()
	all := c.ShowReservations(t)
	var owned []string
	for name := range all {
		if bridge.Owns(prefix, name) {
			owned = append(owned, name)
		}
	}
	slices.Sort(owned)
	if !slices.Equal(owned, accepted) {
		t.Fatalf("step %d (%s): Slurm holds %v, want the accepted set %v", step, what, owned, accepted)
	}
	for _, s := range desired {
		got, ok := all[s.Name]
		if !ok {
			continue
		}
		exp, err := slurmtestExpand(got["Nodes"])
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(s.Nodes)
		slices.Sort(want)
		if !slices.Equal(exp, want) || got["StartTime"] != utc(s.Start) || got["EndTime"] != utc(s.End) {
			t.Fatalf("step %d (%s): %s is %v in Slurm, want %v %s..%s", step, what, s.Name, got, want, utc(s.Start), utc(s.End))
		}
	}
	for name, kv := range hand {
		if fmt.Sprint(all[name]) != fmt.Sprint(kv) {
			t.Fatalf("step %d (%s): hand-made %s changed: %v -> %v\n%s\n%s", step, what, name, kv, all[name],
				c.Run(t, "scontrol", "show", "reservation", "-o"), c.LogTails())
		}
	}
	// No two reservations overlap on a node.
	type span struct {
		name       string
		start, end string
	}
	perNode := map[string][]span{}
	for name, kv := range all {
		ns, err := slurmtestExpand(kv["Nodes"])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			perNode[n] = append(perNode[n], span{name, kv["StartTime"], kv["EndTime"]})
		}
	}
	for n, spans := range perNode {
		for i, a := range spans {
			for _, b := range spans[i+1:] {
				if a.start < b.end && b.start < a.end { // same layout: strings order as times
					t.Fatalf("step %d (%s): %s and %s overlap on %s", step, what, a.name, b.name, n)
				}
			}
		}
	}
	t.Logf("step %d (%s): Slurm holds exactly %d accepted reservations", step, what, len(accepted))
}

func slurmtestExpand(list string) ([]string, error) {
	if list == "(null)" || list == "" {
		return nil, nil
	}
	out, err := slurm.ExpandHostlist(list)
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
