package follow_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent"
	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/bridge/follow"
	"github.com/ledgerd/ledgerd/bridge/slurm"
	"github.com/ledgerd/ledgerd/bridge/slurm/slurmtest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/hostlist"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/ledger"
)

// deadline bounds every wait; the tests fail loudly past it.
const deadline = 60 * time.Second

// slurmAgent starts a one-server agent whose slurm_bridge role follows
// resource "batch" on the test Slurm c, mapping tenant "physics" to root.
func slurmAgent(t *testing.T, c *slurmtest.Cluster) *agent.Agent {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.SlurmBridge = &agent.SlurmBridgeConfig{
		Resource: "batch", Partition: c.Partition, Prefix: "ledgerd-",
		Interval:  agent.Duration(200 * time.Millisecond),
		TenantMap: map[string]follow.Tenant{"physics": {Users: []string{"root"}}},
		SlurmConf: c.Conf, User: c.SlurmUser,
		Scontrol: slurmtest.Bin("scontrol"), Sinfo: slurmtest.Bin("sinfo"),
	}
	if err := cfg.Validate(true); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, agent.Options{Dev: true, HTTPListener: ln, Logger: cfg.NewLogger(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(a.Close)
	testwait.Until(t, deadline, "the agent to lead its cluster of one", a.Node().IsLeader)
	return a
}

// checkSlurmHolds checks that Slurm's reservations with the prefix are
// exactly the given ledger reservations, with their units as nodes and
// their windows.
func checkSlurmHolds(t *testing.T, c *slurmtest.Cluster, rs ...*ledgerdv1.Reservation) {
	t.Helper()
	show := c.ShowReservations(t)
	var got, want []string
	for name := range show {
		if strings.HasPrefix(name, "ledgerd-") {
			got = append(got, name)
		}
	}
	for _, r := range rs {
		name := "ledgerd-" + r.GetId()
		want = append(want, name)
		kv, ok := show[name]
		if !ok {
			continue
		}
		nodes, err := hostlist.Expand(kv["Nodes"], 1000)
		if err != nil {
			t.Fatalf("%s: Nodes=%s: %v", name, kv["Nodes"], err)
		}
		slices.Sort(nodes)
		units := slices.Sorted(slices.Values(r.GetUnits()))
		if !slices.Equal(nodes, units) {
			t.Errorf("%s holds nodes %v in Slurm, the ledger mapped %v", name, nodes, units)
		}
		// The ledger's window rounded inwards to whole seconds.
		s, e, _ := bridge.Window(r.GetStart().AsTime().UnixMilli(), r.GetEnd().AsTime().UnixMilli())
		if start := s.Format(slurm.TimeLayout); kv["StartTime"] != start && r.GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE {
			t.Errorf("%s starts at %s in Slurm, %s in the ledger", name, kv["StartTime"], start)
		}
		if end := e.Format(slurm.TimeLayout); kv["EndTime"] != end {
			t.Errorf("%s ends at %s in Slurm, %s in the ledger", name, kv["EndTime"], end)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Slurm holds %v, the ledger's committed set is %v", got, want)
	}
}

func waitRecord(t *testing.T, a *agent.Agent, id string, st ledgerdv1.MaterializationState) *ledgerdv1.Reservation {
	t.Helper()
	var r *ledgerdv1.Reservation
	testwait.Until(t, deadline, "reservation "+id+" recorded "+st.String(), func() bool {
		var err error
		r, err = a.Ledger().Get(context.Background(), id, false)
		return err == nil && r.GetMaterialization().GetState() == st
	})
	return r
}

// TestSlurmFollowsLedger: booked through ledgerd, materialized by the
// agent's bridge role in a real Slurm with the mapped nodes, recorded in
// the log; a job submitted to the reservation runs on those nodes inside
// the window; an unmapped tenant fails with the reason; a cancel deletes
// the Slurm reservation; a hand-made reservation is left alone.
func TestSlurmFollowsLedger(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{})
	c.Run(t, "scontrol", "create", "reservation", "ReservationName=hand", "StartTime=now+1day", "Duration=60", "Nodes=n4", "Users=root")
	a := slurmAgent(t, c)
	ctx := context.Background()
	l := a.Ledger()
	op := ledger.Write{Tenant: "ops", Operator: true}
	if _, err := l.CreateResource(ctx, op, &ledgerdv1.Resource{Name: "batch", Unit: "nodes", Units: c.NodeNames}); err != nil {
		t.Fatal(err)
	}
	book := func(tenant string, amount int64, in, dur time.Duration) *ledgerdv1.Reservation {
		t.Helper()
		start := time.Now().Add(in).UnixMilli()
		r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: ledger.Write{Tenant: tenant}, Commit: true, Shape: ledger.Shape{
			Parts: []ledger.Part{{Resource: "batch", Amount: amount}}, Duration: dur.Milliseconds(), NotBefore: start, Deadline: start + dur.Milliseconds()}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Starts a few seconds ahead, so that Slurm accepts it as future.
	job := book("physics", 2, 3*time.Second, 3*time.Minute)
	later := book("physics", 1, time.Hour, time.Hour)
	eve := book("eve", 1, 2*time.Hour, time.Hour)

	r := waitRecord(t, a, job.GetId(), ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED)
	waitRecord(t, a, later.GetId(), ledgerdv1.MaterializationState_MATERIALIZATION_STATE_MATERIALIZED)
	ev := waitRecord(t, a, eve.GetId(), ledgerdv1.MaterializationState_MATERIALIZATION_STATE_FAILED)
	if !strings.Contains(ev.GetMaterialization().GetMessage(), `tenant "eve" has no mapping`) {
		t.Errorf("eve's record: %v", ev.GetMaterialization())
	}
	m := r.GetMaterialization()
	if !slices.Equal(m.GetUnits(), slices.Sorted(slices.Values(r.GetUnits()))) || m.GetName() != "ledgerd-"+job.GetId() {
		t.Errorf("record %v for units %v", m, r.GetUnits())
	}
	laterNow, _ := l.Get(ctx, later.GetId(), false)
	checkSlurmHolds(t, c, r, laterNow)
	if _, ok := c.ShowReservations(t)["hand"]; !ok {
		t.Error("the hand-made reservation is gone")
	}

	// The window as the bridge recorded it, once it reported the
	// reservation materialized.
	winStart, winEnd := m.GetStart().AsTime(), m.GetEnd().AsTime()
	if err := os.MkdirAll(filepath.Join(c.Dir, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(c.Dir, "jobs", "hello.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"node=$SLURMD_NODENAME start=$(date +%s)\"\nsleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := c.Run(t, "sbatch", "--parsable", "--reservation="+m.GetName(), "-N", "1", "-t", "5",
		"-D", filepath.Join(c.Dir, "jobs"), "-o", filepath.Join(c.Dir, "jobs", "out-%j.txt"), script)
	id := strings.TrimSpace(strings.Split(out, ";")[0])
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("sbatch printed %q", out)
	}
	defer c.Try("scancel", id)
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
	if !slices.Contains(m.GetUnits(), fields["node"]) {
		t.Fatalf("job ran on %q, outside the booked nodes %v", fields["node"], m.GetUnits())
	}
	sec, err := strconv.ParseInt(fields["start"], 10, 64)
	if err != nil {
		t.Fatalf("job printed %q", line)
	}
	if ran := time.Unix(sec, 0); ran.Before(winStart) || !ran.Before(winEnd) {
		t.Fatalf("job started at %v, outside the booked window [%v, %v)", ran, winStart, winEnd)
	}

	// Completed early in the ledger while the job still runs: Slurm will
	// not delete a reservation with jobs in it, so the bridge ends it
	// about now instead and records it removed; the nodes are free for
	// other work from then on.
	if _, err := l.Complete(ctx, ledger.Write{Tenant: "physics"}, job.GetId(), 0); err != nil {
		t.Fatal(err)
	}
	completed := time.Now()
	rec := waitRecord(t, a, job.GetId(), ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED)
	if msg := rec.GetMaterialization().GetMessage(); !strings.Contains(msg, "ended early in the resource manager") {
		t.Fatalf("completed reservation recorded %q, want it ended early (the job still runs)", msg)
	}
	if kv, ok := c.ShowReservations(t)[m.GetName()]; ok {
		end, err := time.ParseInLocation("2006-01-02T15:04:05", kv["EndTime"], time.UTC)
		if err != nil || !end.Before(winEnd) || end.After(completed.Add(time.Minute)) {
			t.Fatalf("Slurm's reservation ends at %q, want about %v (completed early; booked until %v)", kv["EndTime"], completed, winEnd)
		}
	}
	c.Run(t, "scancel", id)
	testwait.Until(t, deadline, "Slurm to drop the reservation completed early", func() bool {
		_, ok := c.ShowReservations(t)[m.GetName()]
		return !ok
	})

	// Cancel in the ledger: the bridge deletes it in Slurm (once the
	// cancelled job has left it).
	if _, err := l.Cancel(ctx, ledger.Write{Tenant: "physics"}, later.GetId()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, deadline, "Slurm to drop the cancelled reservation", func() bool {
		_, ok := c.ShowReservations(t)["ledgerd-"+later.GetId()]
		return !ok
	})
	waitRecord(t, a, later.GetId(), ledgerdv1.MaterializationState_MATERIALIZATION_STATE_REMOVED)
	checkSlurmHolds(t, c)
	if _, ok := c.ShowReservations(t)["hand"]; !ok {
		t.Error("the hand-made reservation is gone")
	}
}
