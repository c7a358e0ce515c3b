package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/bridge/slurm"
	"github.com/ledgerd/ledgerd/bridge/slurm/slurmtest"
	"github.com/ledgerd/ledgerd/internal/testwait"
)

const prefix = "ledgerd-"

// deadline bounds every wait on Slurm in these tests; they fail loudly
// past it rather than assume how long anything takes.
const deadline = 60 * time.Second

func newDriver(t *testing.T, c *slurmtest.Cluster, zone string, onRetry func(string, int, error)) *slurm.Driver {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	d, err := slurm.New(slurm.Config{
		Prefix:   prefix,
		Env:      c.Env(),
		Scontrol: slurmtest.Bin("scontrol"),
		Sinfo:    slurmtest.Bin("sinfo"),
		User:     c.SlurmUser,
		Zone:     loc,
		Backoff:  slurm.Backoff{Initial: 50 * time.Millisecond, Max: time.Second},
		OnRetry:  onRetry,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func utc(t time.Time) string { return t.UTC().Format(slurm.TimeLayout) }

func mustKind(t *testing.T, err, kind error) {
	t.Helper()
	var e *bridge.Error
	if !errors.Is(err, kind) || !errors.As(err, &e) {
		t.Fatalf("error = %v, want a *bridge.Error of kind %v", err, kind)
	}
	t.Logf("%v", err)
}

// TestDriverAgainstSlurm drives a real Slurm through the driver: nodes,
// create, read back, typed errors, update, delete, a reconcile round, a
// job inside a reservation, and a controller restart in the middle of a
// create.
func TestDriverAgainstSlurm(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 4})
	// Berlin on purpose: the driver writes and reads local wall-clock
	// time in its zone; the raw view reads UTC. They must agree.
	d := newDriver(t, c, "Europe/Berlin", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*deadline)
	defer cancel()

	hour := time.Now().Truncate(time.Second).Add(time.Hour)
	// Hand-made reservations, which the bridge must never touch.
	c.Run(t, "scontrol", "create", "reservation", "ReservationName=handmade", "StartTime="+utc(hour.Add(5*time.Hour)),
		"EndTime="+utc(hour.Add(6*time.Hour)), "Nodes=n4", "Users=root")
	c.Run(t, "scontrol", "create", "reservation", "ReservationName=maint", "StartTime="+utc(hour.Add(7*time.Hour)),
		"EndTime="+utc(hour.Add(8*time.Hour)), "Nodes=n1,n2", "Users=root", "Flags=MAINT")
	foreign := func(t *testing.T) map[string]map[string]string {
		all := c.ShowReservations(t)
		return map[string]map[string]string{"handmade": all["handmade"], "maint": all["maint"]}
	}
	handBefore := foreign(t)

	t.Run("nodes", func(t *testing.T) {
		nodes, err := d.Nodes(ctx, c.Partition)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
			if n.State != "idle" || !n.Usable() {
				t.Errorf("node %+v: want idle and usable", n)
			}
		}
		if !slices.Equal(names, c.NodeNames) {
			t.Fatalf("nodes %v, want %v", names, c.NodeNames)
		}
		_, err = d.Nodes(ctx, "nosuch")
		mustKind(t, err, bridge.ErrUnknownPartition)
	})

	r1 := bridge.Spec{Name: prefix + "1", Nodes: []string{"n2", "n1"}, Start: hour, End: hour.Add(time.Hour), Users: []string{"root"}}
	r2 := bridge.Spec{Name: prefix + "2", Nodes: []string{"n3"}, Start: hour, End: hour.Add(90*time.Minute + 7*time.Second), Accounts: []string{"physics"}}

	t.Run("create and read back", func(t *testing.T) {
		for _, s := range []bridge.Spec{r1, r2} {
			if err := d.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		all := c.ShowReservations(t)
		for _, tc := range []struct {
			spec             bridge.Spec
			nodes, who, list string
		}{{r1, "n[1-2]", "Users", "root"}, {r2, "n3", "Accounts", "physics"}} {
			got := all[tc.spec.Name]
			if got == nil {
				t.Fatalf("%s not in scontrol show reservation: %v", tc.spec.Name, all)
			}
			want := map[string]string{"Nodes": tc.nodes, "StartTime": utc(tc.spec.Start), "EndTime": utc(tc.spec.End), tc.who: tc.list}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %s=%s, want %s", tc.spec.Name, k, got[k], v)
				}
			}
		}
		res, err := d.Reservations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := bridge.Reconcile([]bridge.Spec{r1, r2}, res, prefix, time.Now())
		if !p.Converged() || len(p.Drift) != 0 {
			t.Fatalf("after create, Reconcile plans %v, drift %v", p.Actions, p.Drift)
		}
		if len(p.Foreign) != 2 || len(p.Maintenance) != 1 || p.Maintenance[0].Name != "maint" {
			t.Fatalf("foreign %v, maintenance %v: want handmade and maint, maint as maintenance", p.Foreign, p.Maintenance)
		}
	})

	t.Run("typed errors", func(t *testing.T) {
		s := r1
		s.Name = prefix + "3"
		mustKind(t, d.Create(ctx, s), bridge.ErrOverlap)
		dup := r1 // same name, elsewhere: Slurm checks overlaps before names
		dup.Nodes, dup.Start, dup.End = []string{"n4"}, hour.Add(10*time.Hour), hour.Add(11*time.Hour)
		mustKind(t, d.Create(ctx, dup), bridge.ErrDuplicateName)
		bad := r1
		bad.Name, bad.Nodes, bad.Start, bad.End = prefix+"4", []string{"n9"}, hour.Add(10*time.Hour), hour.Add(11*time.Hour)
		mustKind(t, d.Create(ctx, bad), bridge.ErrInvalidNodes)
		past := r1
		past.Name, past.Start, past.End = prefix+"5", hour.Add(-3*time.Hour), hour.Add(-2*time.Hour)
		mustKind(t, d.Create(ctx, past), bridge.ErrTimeInPast)
		// A driver whose clock is an hour slow writes a window that Slurm
		// finds over, and Slurm says so. (Slurm accepts a past start as
		// long as the end is ahead.)
		skewed, err := slurm.New(slurm.Config{Prefix: prefix, Env: c.Env(), User: c.SlurmUser, Scontrol: slurmtest.Bin("scontrol"),
			Now: func() time.Time { return time.Now().Add(-time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		past.Nodes, past.Start, past.End = []string{"n4"}, hour.Add(-110*time.Minute), hour.Add(-100*time.Minute)
		mustKind(t, skewed.Create(ctx, past), bridge.ErrTimeInPast)
		comma := r1
		comma.Name = prefix + "6,7"
		mustKind(t, d.Create(ctx, comma), bridge.ErrInvalidName)
		mustKind(t, d.Delete(ctx, "handmade"), bridge.ErrNotOwned)
		mustKind(t, d.Update(ctx, bridge.Spec{Name: "maint"}, bridge.Reservation{Name: "maint"}), bridge.ErrNotOwned)
		mustKind(t, d.Delete(ctx, prefix+"404"), bridge.ErrUnknownReservation)
		ghost := r1
		ghost.Name = prefix + "404"
		mustKind(t, d.Update(ctx, ghost, bridge.Reservation{Name: ghost.Name}), bridge.ErrUnknownReservation)
		if _, ok := c.ShowReservations(t)[prefix+"6"]; ok {
			t.Fatal("a refused name reached Slurm")
		}
	})

	t.Run("update", func(t *testing.T) {
		have, err := d.Reservation(ctx, r1.Name)
		if err != nil {
			t.Fatal(err)
		}
		// Move to n1 only, later and longer; switch from users to accounts.
		want := r1
		want.Nodes, want.Start, want.End = []string{"n1"}, hour.Add(30*time.Minute), hour.Add(2*time.Hour)
		want.Users, want.Accounts = nil, []string{"chemistry"}
		if err := d.Update(ctx, want, have); err != nil {
			t.Fatal(err)
		}
		got := c.ShowReservations(t)[r1.Name]
		for k, v := range map[string]string{"Nodes": "n1", "StartTime": utc(want.Start), "EndTime": utc(want.End), "Users": "(null)", "Accounts": "chemistry"} {
			if got[k] != v {
				t.Errorf("after update %s=%s, want %s", k, got[k], v)
			}
		}
		// n3 is r2's at that time: the update is refused and says why.
		have, err = d.Reservation(ctx, r1.Name)
		if err != nil {
			t.Fatal(err)
		}
		clash := want
		clash.Nodes = []string{"n1", "n3"}
		mustKind(t, d.Update(ctx, clash, have), bridge.ErrOverlap)
		r1 = want
	})

	t.Run("reconcile round", func(t *testing.T) {
		// The ledger now wants r1 back on n1,n2, r2 shortened, a new r8,
		// and no longer r-anything else; an orphan made by a crashed
		// earlier bridge must go.
		orphan := bridge.Spec{Name: prefix + "orphan", Nodes: []string{"n4"}, Start: hour, End: hour.Add(time.Hour), Users: []string{"root"}}
		if err := d.Create(ctx, orphan); err != nil {
			t.Fatal(err)
		}
		w1 := r1
		w1.Nodes = []string{"n1", "n2"}
		w2 := r2
		w2.End = hour.Add(45 * time.Minute)
		r8 := bridge.Spec{Name: prefix + "8", Nodes: []string{"n3", "n4"}, Start: hour.Add(2 * time.Hour), End: hour.Add(3 * time.Hour), Users: []string{"root"}}
		desired := []bridge.Spec{w1, w2, r8}
		for round := 1; ; round++ {
			res, err := d.Reservations(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p := bridge.Reconcile(desired, res, prefix, time.Now())
			if p.Converged() {
				if round != 2 {
					t.Fatalf("converged in round %d, want 2 (one round of writes)", round)
				}
				break
			}
			if round > 1 {
				t.Fatalf("round %d still plans %v", round, p.Actions)
			}
			results, err := bridge.Apply(ctx, d, p.Actions)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				t.Logf("%v -> %v", r.Action, r.Err)
				if r.Err != nil {
					t.Errorf("%v: %v", r.Action, r.Err)
				}
			}
		}
		all := c.ShowReservations(t)
		var owned []string
		for name := range all {
			if strings.HasPrefix(name, prefix) {
				owned = append(owned, name)
			}
		}
		slices.Sort(owned)
		if want := []string{w1.Name, w2.Name, r8.Name}; !slices.Equal(owned, want) {
			t.Fatalf("Slurm holds %v, want exactly %v", owned, want)
		}
		if all[w1.Name]["Nodes"] != "n[1-2]" || all[r8.Name]["Nodes"] != "n[3-4]" || all[w2.Name]["EndTime"] != utc(w2.End) {
			t.Fatalf("Slurm's reservations differ from the desired set: %v", all)
		}
	})

	t.Run("hand edits are repaired", func(t *testing.T) {
		// Someone deletes one of ours and moves another by hand; one round
		// puts both back and leaves the hand-made ones alone.
		want, err := d.Reservations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var desired []bridge.Spec
		for _, r := range want {
			if bridge.Owns(prefix, r.Name) {
				desired = append(desired, r.Spec())
			}
		}
		c.Run(t, "scontrol", "delete", "ReservationName="+prefix+"2")
		c.Run(t, "scontrol", "update", "ReservationName="+prefix+"8", "Nodes=n4", "EndTime="+utc(hour.Add(150*time.Minute)))
		res, err := d.Reservations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := bridge.Reconcile(desired, res, prefix, time.Now())
		var drift []string
		for _, dr := range p.Drift {
			drift = append(drift, fmt.Sprintf("%s %s %v", dr.Name, dr.Kind, dr.Fields))
		}
		if got, want := strings.Join(drift, "; "), prefix+"2 missing []; "+prefix+"8 changed [nodes end]"; got != want {
			t.Fatalf("drift %q, want %q", got, want)
		}
		if _, err := bridge.Apply(ctx, d, p.Actions); err != nil {
			t.Fatal(err)
		}
		res, err = d.Reservations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if again := bridge.Reconcile(desired, res, prefix, time.Now()); !again.Converged() {
			t.Fatalf("not repaired: %v", again.Actions)
		}
	})

	t.Run("nodes: drain, busy, resume", func(t *testing.T) {
		c.Run(t, "scontrol", "update", "NodeName=n4", "State=DRAIN", "Reason=disk check")
		nodes, err := d.Nodes(ctx, c.Partition)
		if err != nil {
			t.Fatal(err)
		}
		n4 := nodes[3]
		if n4.Name != "n4" || n4.Usable() || !slices.Contains(n4.Flags, "drain") || n4.Reason != "disk check" {
			t.Fatalf("drained n4 reads %+v", n4)
		}
		c.Run(t, "scontrol", "update", "NodeName=n4", "State=RESUME")
		// Slurm may flag a resumed node as not responding until its next
		// ping; the bridge sees it usable once Slurm does.
		testwait.Until(t, deadline, "Slurm to report the resumed n4 usable", func() bool {
			nodes, err = d.Nodes(ctx, c.Partition)
			if err != nil {
				t.Fatal(err)
			}
			return nodes[3].Usable()
		})
		// A job outside any reservation holds n1 now: a reservation on n1
		// from now is refused as busy nodes.
		out := c.Run(t, "sbatch", "--parsable", "-w", "n1", "-t", "5", "-D", filepath.Join(c.Dir, "jobs"),
			"-o", "/dev/null", "--wrap", "sleep 300")
		id := strings.TrimSpace(strings.Split(out, ";")[0])
		defer c.Try("scancel", id)
		waitJob(t, c, id, "RUNNING")
		busy := bridge.Spec{Name: prefix + "busy", Nodes: []string{"n1"}, Start: time.Now().Add(-time.Second).Truncate(time.Second),
			End: time.Now().Add(10 * time.Minute).Truncate(time.Second), Users: []string{"root"}}
		mustKind(t, d.Create(ctx, busy), bridge.ErrNodesBusy)
		c.Run(t, "scancel", id)
	})

	t.Run("job runs inside its reservation", func(t *testing.T) {
		jobRunsInReservation(ctx, t, c, d)
	})

	t.Run("controller restart during a create", func(t *testing.T) {
		before := c.ShowReservations(t)
		var mu sync.Mutex
		var attempts []time.Time
		retried := make(chan struct{}, 1)
		rd := newDriver(t, c, "UTC", func(op string, attempt int, err error) {
			mu.Lock()
			attempts = append(attempts, time.Now())
			mu.Unlock()
			if !errors.Is(err, bridge.ErrUnavailable) {
				t.Errorf("retry of %s after %v: want ErrUnavailable", op, err)
			}
			select {
			case retried <- struct{}{}:
			default:
			}
		})
		c.StopController(t)
		spec := bridge.Spec{Name: prefix + "restart", Nodes: []string{"n2"}, Start: hour.Add(4 * time.Hour), End: hour.Add(5 * time.Hour), Users: []string{"root"}}
		done := make(chan error, 1)
		go func() { done <- rd.Create(ctx, spec) }()
		select {
		case <-retried:
		case err := <-done:
			t.Fatalf("create finished with slurmctld down: %v", err)
		case <-time.After(deadline):
			t.Fatal("no retry reported within the deadline while slurmctld is down")
		}
		c.StartController(t)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("create across the restart: %v", err)
			}
		case <-time.After(deadline):
			t.Fatal("create did not finish within the deadline after slurmctld came back")
		}
		mu.Lock()
		n := len(attempts)
		mu.Unlock()
		t.Logf("create retried %d times across the restart", n)
		after := c.ShowReservations(t)
		for name, kv := range before {
			if got := after[name]; got == nil || got["Nodes"] != kv["Nodes"] || got["StartTime"] != kv["StartTime"] || got["EndTime"] != kv["EndTime"] {
				t.Errorf("reservation %s did not survive the restart: before %v, after %v", name, kv, got)
			}
		}
		if got := after[spec.Name]; got == nil || got["Nodes"] != "n2" {
			t.Fatalf("the create across the restart is missing: %v", got)
		}
		if len(after) != len(before)+1 {
			t.Fatalf("%d reservations after, want %d", len(after), len(before)+1)
		}
	})

	t.Run("hand-made reservations untouched", func(t *testing.T) {
		after := foreign(t)
		for name, kv := range handBefore {
			if fmt.Sprint(after[name]) != fmt.Sprint(kv) {
				t.Errorf("%s changed:\nbefore %v\nafter  %v", name, kv, after[name])
			}
		}
	})
}

// jobRunsInReservation books n2,n3 from two seconds ahead, derives the
// window from what Slurm reports once the reservation exists, submits a
// job to it and checks that it ran on the reserved nodes inside the window;
// while it runs, the reservation cannot be deleted (ErrInUse).
func jobRunsInReservation(ctx context.Context, t *testing.T, c *slurmtest.Cluster, d *slurm.Driver) {
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	spec := bridge.Spec{Name: prefix + "job", Nodes: []string{"n2", "n3"}, Start: start, End: start.Add(3 * time.Minute), Users: []string{"root"}}
	// r1 holds n1,n2 an hour ahead; a 3-minute window now is free.
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	have, err := d.Reservation(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	winStart, winEnd := have.Start, have.End
	script := filepath.Join(c.Dir, "jobs", "hello.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"node=$SLURMD_NODENAME host=$(hostname) start=$(date +%s)\"\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := c.Run(t, "sbatch", "--parsable", "--reservation="+spec.Name, "-N", "1", "-t", "2",
		"-D", filepath.Join(c.Dir, "jobs"), "-o", filepath.Join(c.Dir, "jobs", "out-%j.txt"), script)
	id := strings.TrimSpace(strings.Split(out, ";")[0])
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("sbatch printed %q", out)
	}
	defer c.Try("scancel", id)

	// Wait for it to run and print.
	var line string
	testwait.Until(t, deadline, "job "+id+" to print its line", func() bool {
		data, _ := os.ReadFile(filepath.Join(c.Dir, "jobs", "out-"+id+".txt"))
		line = strings.TrimSpace(string(data))
		return line != ""
	})
	fields := map[string]string{}
	for _, w := range strings.Fields(line) {
		k, v, _ := strings.Cut(w, "=")
		fields[k] = v
	}
	if !slices.Contains(spec.Nodes, fields["node"]) {
		t.Fatalf("job ran on %q, outside the reserved nodes %v", fields["node"], spec.Nodes)
	}
	sec, err := strconv.ParseInt(fields["start"], 10, 64)
	if err != nil {
		t.Fatalf("job printed %q", line)
	}
	ran := time.Unix(sec, 0)
	if ran.Before(winStart) || !ran.Before(winEnd) {
		t.Fatalf("job started at %v, outside the reservation's window [%v, %v)", ran, winStart, winEnd)
	}
	info := c.Run(t, "scontrol", "show", "job", id, "-o")
	if !strings.Contains(info, "Reservation="+spec.Name) || !strings.Contains(info, "JobState=RUNNING") {
		t.Fatalf("job record: %s", info)
	}
	t.Logf("job %s ran on %s at %v, window [%v, %v)", id, fields["node"], ran.UTC(), winStart.UTC(), winEnd.UTC())
	mustKind(t, d.Delete(ctx, spec.Name), bridge.ErrInUse)
	c.Run(t, "scancel", id)
	// Once the job is gone the reservation can be deleted.
	testwait.Until(t, deadline, "the reservation to be deletable once its job is gone", func() bool {
		err := d.Delete(ctx, spec.Name)
		if err != nil && !errors.Is(err, bridge.ErrInUse) {
			t.Fatalf("delete after the job was cancelled: %v", err)
		}
		return err == nil
	})
}

// waitJob waits until the job reaches state, failing loudly at the
// deadline.
func waitJob(t *testing.T, c *slurmtest.Cluster, id, state string) {
	t.Helper()
	testwait.Until(t, deadline, "job "+id+" to be "+state, func() bool {
		info, err := c.Try("scontrol", "show", "job", id, "-o")
		return err == nil && strings.Contains(info, "JobState="+state)
	})
}
