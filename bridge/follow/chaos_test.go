package follow_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent"
	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/bridge/follow"
	"github.com/ledgerd/ledgerd/bridge/slurm"
	"github.com/ledgerd/ledgerd/bridge/slurm/slurmtest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/hostlist"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/rpc"
)

var (
	chaosSteps = flag.Int("follow.chaos", 6, "steps of TestChaosLedgerAndSlurm (make slurm-chaos runs more)")
	chaosSeed  = flag.Uint64("follow.seed", 0, "seed of TestChaosLedgerAndSlurm (0: a fresh one, printed)")
)

// TestChaosLedgerAndSlurm runs a three-server ledgerd cluster whose
// servers all carry the slurm_bridge role against a real Slurm, while a
// nemesis books and cancels through the ledger, kills the ledger's leader
// (once: two of three must stay), kills and restarts slurmctld, deletes
// and edits the bridge's reservations by hand, and drains and resumes
// nodes. After every step, at quiescence, Slurm holds exactly the ledger's
// committed set within the horizon with the mapped nodes and windows, no
// two of the bridge's reservations overlap on a node, and the hand-made
// reservations are as they were. The default suite runs a few steps;
// make slurm-chaos runs many (-follow.chaos=N, -follow.seed to replay).
func TestChaosLedgerAndSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos with a real Slurm: not in -short")
	}
	seed := *chaosSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -follow.seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 3))

	c := slurmtest.Start(t, slurmtest.Options{Nodes: 4})
	base := time.Now().Truncate(time.Minute).Add(2 * time.Hour)
	layout := slurm.TimeLayout
	c.Run(t, "scontrol", "create", "reservation", "ReservationName=handmade", "StartTime="+base.Add(30*time.Hour).UTC().Format(layout),
		"EndTime="+base.Add(31*time.Hour).UTC().Format(layout), "Nodes=n4", "Users=root")
	// slurmctld saves its state every few seconds; a graceful restart
	// makes the hand-made reservation durable before the nemesis starts.
	c.StopController(t)
	c.StartController(t)
	hand := c.ShowReservations(t)["handmade"]

	cl := agenttest.NewClusterWith(t, 3, rpc.Options{}, func(_ int, cfg *agent.Config) {
		cfg.SlurmBridge = &agent.SlurmBridgeConfig{
			Resource: "batch", Partition: c.Partition, Prefix: "ledgerd-",
			Interval:  agent.Duration(200 * time.Millisecond),
			TenantMap: map[string]follow.Tenant{"*": {Users: []string{"root"}}},
			SlurmConf: c.Conf, User: c.SlurmUser,
			Scontrol: slurmtest.Bin("scontrol"), Sinfo: slurmtest.Bin("sinfo"),
		}
	})
	leaderLedger := func() *agenttest.Server { return cl.WaitLeader(30 * time.Second) }
	ctx := context.Background()
	op := ledger.Write{Tenant: "ops", Operator: true}
	if _, err := leaderLedger().Agent.Ledger().CreateResource(ctx, op, &ledgerdv1.Resource{Name: "batch", Unit: "nodes", Units: c.NodeNames}); err != nil {
		t.Fatal(err)
	}
	var booked []string
	killedLeader := false
	drained := ""

	book := func() {
		amount := int64(1 + r.IntN(2))
		start := base.Add(time.Duration(r.IntN(24*60)) * time.Minute).UnixMilli()
		dur := int64(30+r.IntN(90)) * 60_000
		res, _, err := leaderLedger().Agent.Ledger().Hold(ctx, ledger.HoldArgs{Write: ledger.Write{Tenant: "physics", IdempotencyKey: fmt.Sprintf("k%d", r.Uint64())}, Commit: true,
			Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "batch", Amount: amount}}, Duration: dur, NotBefore: start, Deadline: start + 6*3_600_000}})
		if err != nil {
			t.Logf("book: %v", err) // no room, or a leader change: the ledger decided
			return
		}
		booked = append(booked, res.GetId())
	}
	for range 4 {
		book()
	}
	check := func(step string) {
		t.Helper()
		var last string
		testwait.Until(t, 2*deadline, step+": Slurm equal to the ledger (the last difference is logged above)", func() bool {
			m := mismatch(t, c, leaderLedger().Agent.Ledger(), booked, hand)
			if m != last && m != "" {
				t.Logf("%s: not yet: %s", step, m)
			}
			last = m
			return m == ""
		})
	}
	check("start")

	for step := range *chaosSteps {
		var what string
		switch k := r.IntN(8); {
		case k == 0 && !killedLeader:
			l := leaderLedger()
			book() // a create in flight when the leader dies
			cl.Stop(l)
			killedLeader = true
			what = "kill the ledger's leader " + l.Name
		case k <= 1:
			c.KillController(t)
			book()
			c.StartController(t)
			what = "kill and restart slurmctld"
		case k == 2 && len(booked) > 0:
			id := booked[r.IntN(len(booked))]
			_, err := leaderLedger().Agent.Ledger().Cancel(ctx, ledger.Write{Tenant: "physics", IdempotencyKey: fmt.Sprintf("c%d", r.Uint64())}, id)
			what = fmt.Sprintf("cancel %s (%v)", id, err)
		case k == 3:
			if name := ownedName(t, c); name != "" {
				_, _ = c.Try("scontrol", "delete", "ReservationName="+name)
				what = "delete " + name + " by hand"
			}
		case k == 4:
			if name := ownedName(t, c); name != "" {
				_, _ = c.Try("scontrol", "update", "ReservationName="+name, "Duration=5")
				what = "edit " + name + " by hand"
			}
		case k == 5:
			if drained == "" {
				drained = c.NodeNames[r.IntN(3)]
				c.Run(t, "scontrol", "update", "NodeName="+drained, "State=DRAIN", "Reason=chaos")
				what = "drain " + drained
			} else {
				// A controller killed since may have lost the drain: then
				// RESUME is refused as an invalid state, which is fine.
				if _, err := c.Try("scontrol", "update", "NodeName="+drained, "State=RESUME"); err != nil && !strings.Contains(err.Error(), "Invalid node state") {
					t.Fatalf("resume %s: %v", drained, err)
				}
				what = "resume " + drained
				drained = ""
			}
		default:
			book()
			what = "book"
		}
		t.Logf("step %d: %s", step, what)
		check(fmt.Sprintf("step %d (%s)", step, what))
	}
}

// ownedName picks one of the bridge's reservations in Slurm ("" if none).
func ownedName(t *testing.T, c *slurmtest.Cluster) string {
	var names []string
	for n := range c.ShowReservations(t) {
		if strings.HasPrefix(n, "ledgerd-") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return names[0]
}

// mismatch compares Slurm with the ledger and says what differs ("" when
// they agree): the bridge's reservations are exactly the committed ones,
// with their units and windows, no two overlap on a node, and the
// hand-made one is unchanged.
func mismatch(t *testing.T, c *slurmtest.Cluster, l ledgerReader, ids []string, hand map[string]string) string {
	show := c.ShowReservations(t)
	if fmt.Sprint(show["handmade"]) != fmt.Sprint(hand) {
		return fmt.Sprintf("hand-made reservation changed: %v, was %v", show["handmade"], hand)
	}
	want := map[string]*ledgerdv1.Reservation{}
	for _, id := range ids {
		r, err := l.Get(context.Background(), id, false)
		if err != nil {
			return fmt.Sprintf("get %s: %v", id, err)
		}
		switch r.GetState() {
		case ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED, ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE:
			want["ledgerd-"+id] = r
		}
	}
	type span struct {
		name       string
		start, end string
	}
	perNode := map[string][]span{}
	for name, kv := range show {
		if !strings.HasPrefix(name, "ledgerd-") {
			continue
		}
		r, ok := want[name]
		if !ok {
			return name + " in Slurm but not committed in the ledger"
		}
		nodes, err := hostlist.Expand(kv["Nodes"], 1000)
		if err != nil {
			return fmt.Sprintf("%s: Nodes=%s: %v", name, kv["Nodes"], err)
		}
		slices.Sort(nodes)
		if units := slices.Sorted(slices.Values(r.GetUnits())); !slices.Equal(nodes, units) {
			return fmt.Sprintf("%s on %v in Slurm, %v in the ledger", name, nodes, units)
		}
		s, e, _ := bridge.Window(r.GetStart().AsTime().UnixMilli(), r.GetEnd().AsTime().UnixMilli())
		if kv["StartTime"] != s.Format(slurm.TimeLayout) || kv["EndTime"] != e.Format(slurm.TimeLayout) {
			return fmt.Sprintf("%s %s..%s in Slurm, %s..%s in the ledger", name, kv["StartTime"], kv["EndTime"], s.Format(slurm.TimeLayout), e.Format(slurm.TimeLayout))
		}
		for _, n := range nodes {
			for _, o := range perNode[n] {
				if o.start < kv["EndTime"] && kv["StartTime"] < o.end {
					return fmt.Sprintf("%s and %s overlap on %s", name, o.name, n)
				}
			}
			perNode[n] = append(perNode[n], span{name, kv["StartTime"], kv["EndTime"]})
		}
	}
	for name := range want {
		if _, ok := show[name]; !ok {
			return name + " committed in the ledger but not in Slurm"
		}
	}
	return ""
}

// ledgerReader is what mismatch reads.
type ledgerReader = interface {
	Get(ctx context.Context, id string, stale bool) (*ledgerdv1.Reservation, error)
}
