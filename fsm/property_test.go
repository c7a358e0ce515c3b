package fsm

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

var (
	propSeed  = flag.Uint64("fsm.seed", 0, "run the property tests with this seed only (0: the built-in seeds)")
	propSeeds = flag.Int("fsm.seeds", 12, "number of seeds for the property tests")
	propSteps = flag.Int("fsm.steps", 250, "commands per property-test stream")
)

// gen produces random but plausible command streams: a few resources and
// IDs so that commands often hit existing state, clock jumps backwards,
// invalid fields, idempotency keys reused.
type gen struct {
	r   *rand.Rand
	now int64
	ids []string
}

var genResources = []string{"cpu", "gpu", "net"}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

// id mostly names one of the most recently returned reservations, so that
// commit, abort, modify and cancel meet live ones.
func (g *gen) id() string {
	if n := len(g.ids); n > 0 && g.r.IntN(5) > 0 {
		return g.ids[n-1-g.r.IntN(min(n, 6))]
	}
	return g.pick([]string{"a", "b", "c", "d", "e", "f", "nope"})
}

func (g *gen) amount() int64 {
	if g.r.IntN(20) == 0 {
		return 0
	}
	return int64(1 + g.r.IntN(8))
}

func (g *gen) parts() []*fsmv1.Part {
	n := 1 + g.r.IntN(2)
	var ps []*fsmv1.Part
	for range n {
		res := g.pick(genResources)
		if g.r.IntN(30) == 0 {
			res = "tape"
		}
		ps = append(ps, &fsmv1.Part{Resource: res, Amount: g.amount()})
	}
	return ps
}

func (g *gen) command() *fsmv1.Command {
	// Log time: mostly forward, sometimes a leader with a clock behind.
	g.now += int64(g.r.IntN(40))
	if g.r.IntN(25) == 0 {
		g.now -= 300
	}
	c := &fsmv1.Command{Owner: g.pick([]string{"alice", "alice", "alice", "alice", "bob"})}
	if g.r.IntN(4) == 0 {
		// Mostly fresh keys, sometimes a retry of a recent one.
		c.IdempotencyKey = fmt.Sprintf("k%d", g.r.IntN(200))
	}
	if k := g.r.IntN(100); k < 24 {
		g.policyCommand(c, k)
	} else if k < 30 {
		g.limitsCommand(c, k-24)
	} else {
		g.tableCommand(c)
	}
	if g.r.IntN(10) == 0 {
		c.Privileged = true
	}
	return c
}

// policySpec returns a random admission policy, sometimes with options
// its policy does not use or out of range.
func (g *gen) policySpec() *fsmv1.PolicySpec {
	if g.r.IntN(6) == 0 {
		return nil
	}
	p := &fsmv1.PolicySpec{Policy: fsmv1.AdmissionPolicy(g.r.IntN(4))}
	switch p.Policy {
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED:
		p.MinSuccessPermille = []uint32{0, 10, 10, 50, 100, 1000}[g.r.IntN(6)]
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE:
		p.MaxPushes = uint32(g.r.IntN(3))
	}
	if g.r.IntN(20) == 0 {
		p.MinSuccessPermille = 1001
	}
	return p
}

// policyCommand makes c (by k in 0..23) a SET_POLICY, a SUBMIT_JOB, a
// CO_RESERVE, a one-part reservation that contends for a policy resource
// soon, or a completion at the log time (what teaches the release model).
func (g *gen) policyCommand(c *fsmv1.Command, k int) {
	switch {
	case k < 10:
		req := &fsmv1.ReservationRequest{
			Parts:          []*fsmv1.Part{{Resource: g.pick([]string{"gpu", "net", "lax", "lax"}), Amount: int64(4 + g.r.IntN(7))}},
			DurationMillis: int64(50 + g.r.IntN(150)),
			StartMillis:    proto.Int64(g.now + max(0, int64(g.r.IntN(400))-200)),
		}
		if g.r.IntN(3) == 0 {
			req.Id = g.pick([]string{"a", "b", "c", "d", "e", "f"})
		}
		c.Type = fsmv1.Command_TYPE_RESERVE
		c.Payload = &fsmv1.Command_Request{Request: req}
		return
	case k < 14:
		e := &fsmv1.Complete{Id: g.id()}
		if g.r.IntN(3) == 0 {
			e.AtMillis = proto.Int64(g.now + int64(g.r.IntN(100)))
		}
		c.Type = fsmv1.Command_TYPE_COMPLETE
		c.Payload = &fsmv1.Command_Complete{Complete: e}
		return
	case k < 17:
		name := g.pick(genResources)
		if g.r.IntN(20) == 0 {
			name = ""
		}
		c.Type = fsmv1.Command_TYPE_SET_POLICY
		c.Payload = &fsmv1.Command_SetPolicy{SetPolicy: &fsmv1.SetPolicy{Name: name, Policy: g.policySpec()}}
		return
	case k >= 23:
		g.coReserve(c)
		return
	}
	j := &fsmv1.SubmitJob{
		Part:            g.parts()[0],
		DurationMillis:  int64(g.r.IntN(200)),
		NotBeforeMillis: g.now + int64(g.r.IntN(400)) - 50,
		Labels:          map[string]string{"job": fmt.Sprint(g.r.IntN(3))},
	}
	if g.r.IntN(2) == 0 {
		j.Id = g.pick([]string{"a", "b", "c", "d", "e", "f"})
	}
	c.Type = fsmv1.Command_TYPE_SUBMIT_JOB
	c.Payload = &fsmv1.Command_SubmitJob{SubmitJob: j}
}

// coReserve makes c a CO_RESERVE of 1..3 sub-requests soon over 1..3
// candidates (sometimes the same one twice, or a zero amount).
func (g *gen) coReserve(c *fsmv1.Command) {
	co := &fsmv1.CoReserve{MinJointPermille: []uint32{0, 0, 300, 900}[g.r.IntN(4)]}
	if g.r.IntN(2) == 0 {
		co.Id = g.pick([]string{"a", "b", "c", "d", "e", "f"})
	}
	for range 1 + g.r.IntN(3) {
		co.Subs = append(co.Subs, &fsmv1.CoSub{Amount: g.amount(), StartMillis: g.now + int64(g.r.IntN(400)) - 20, DurationMillis: int64(g.r.IntN(200))})
		co.Candidates = append(co.Candidates, g.pick([]string{"cpu", "gpu", "net", "lax", "lax"}))
	}
	c.Type = fsmv1.Command_TYPE_CO_RESERVE
	c.Payload = &fsmv1.Command_CoReserve{CoReserve: co}
}

// resultIDs returns the reservation IDs a result names.
func resultIDs(res *fsmv1.Result) []string {
	var ids []string
	if r := res.GetReservation(); r != nil {
		ids = append(ids, r.GetId())
	}
	for _, p := range res.GetCoAdmission().GetPlacements() {
		ids = append(ids, p.GetReservation().GetId())
	}
	return ids
}

// tableCommand makes c one of the reservation and resource commands.
func (g *gen) tableCommand(c *fsmv1.Command) {
	switch k := g.r.IntN(100); {
	case k < 4:
		c.Type = fsmv1.Command_TYPE_CREATE_RESOURCE
		c.Payload = &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{
			Name: g.pick(genResources), Capacity: int64(g.r.IntN(20)), Labels: map[string]string{"zone": "a", "rack": "1"},
			Policy: g.policySpec(),
		}}
	case k < 7:
		u := &fsmv1.UpdateResource{Name: g.pick(genResources), Capacity: int64(g.r.IntN(20))}
		if g.r.IntN(2) == 0 {
			u.FromMillis = proto.Int64(g.now + int64(g.r.IntN(400)) - 50)
			u.ToMillis = proto.Int64(u.GetFromMillis() + int64(g.r.IntN(400)))
		}
		c.Type = fsmv1.Command_TYPE_UPDATE_RESOURCE
		c.Payload = &fsmv1.Command_UpdateResource{UpdateResource: u}
	case k < 8:
		c.Type = fsmv1.Command_TYPE_DELETE_RESOURCE
		c.Payload = &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: g.pick(genResources)}}
	case k < 45:
		req := &fsmv1.ReservationRequest{
			Parts:          g.parts(),
			DurationMillis: int64(g.r.IntN(200)),
			HoldTtlMillis:  int64(g.r.IntN(300)),
			Labels:         map[string]string{"job": fmt.Sprint(g.r.IntN(3))},
		}
		if g.r.IntN(2) == 0 {
			req.Id = g.pick([]string{"a", "b", "c", "d", "e", "f"})
		}
		switch g.r.IntN(3) {
		case 0:
			req.StartMillis = proto.Int64(g.now + int64(g.r.IntN(1500)) - 20)
		case 1:
			req.NotBeforeMillis = g.now + int64(g.r.IntN(1000)) - 50
			req.DeadlineMillis = req.NotBeforeMillis + int64(g.r.IntN(800))
		}
		c.Type = fsmv1.Command_TYPE_HOLD
		if g.r.IntN(3) == 0 {
			c.Type = fsmv1.Command_TYPE_RESERVE
		}
		c.Payload = &fsmv1.Command_Request{Request: req}
	case k < 60:
		c.Type = fsmv1.Command_TYPE_COMMIT
		c.Payload = &fsmv1.Command_Target{Target: &fsmv1.Target{Id: g.id()}}
	case k < 68:
		c.Type = fsmv1.Command_TYPE_ABORT
		c.Payload = &fsmv1.Command_Target{Target: &fsmv1.Target{Id: g.id()}}
	case k < 76:
		c.Type = fsmv1.Command_TYPE_CANCEL
		c.Payload = &fsmv1.Command_Target{Target: &fsmv1.Target{Id: g.id()}}
	case k < 84:
		c.Type = fsmv1.Command_TYPE_COMPLETE
		e := &fsmv1.Complete{Id: g.id()}
		if g.r.IntN(2) == 0 {
			e.AtMillis = proto.Int64(g.now + int64(g.r.IntN(300)) - 20)
		}
		c.Payload = &fsmv1.Command_Complete{Complete: e}
	case k < 92:
		m := &fsmv1.Modify{Id: g.id(), HoldTtlMillis: int64(g.r.IntN(200))}
		if g.r.IntN(2) == 0 {
			m.Parts = g.parts()
		}
		if g.r.IntN(3) > 0 {
			m.StartMillis = proto.Int64(g.now + int64(g.r.IntN(1500)) - 10)
		}
		if g.r.IntN(3) == 0 {
			m.EndMillis = proto.Int64(g.now + int64(g.r.IntN(1800)))
		}
		c.Type = fsmv1.Command_TYPE_MODIFY
		c.Payload = &fsmv1.Command_Modify{Modify: m}
	default:
		c.Type = fsmv1.Command_TYPE_EXPIRE
		c.Payload = &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}
	}
}

// stream returns n stamped, encoded commands.
func (g *gen) stream(t testing.TB, n int) [][]byte {
	t.Helper()
	out := make([][]byte, 0, n+n/4+2)
	add := func(cmd *fsmv1.Command) {
		b, err := Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = Stamp(b, g.now); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for i := range n {
		cmd := g.command()
		switch {
		case i < len(genResources):
			// cpu without a policy, gpu MOVE_VARIABLE, net RELAXED.
			cmd = createPolicyRes(genResources[i], int64(8+4*i), []*fsmv1.PolicySpec{nil, spec(MOVE, 0, 2), spec(RELAXED, 10, 0)}[i])
		case i == len(genResources):
			// lax stays RELAXED with a low v*, so that relaxed
			// admissions and violations occur.
			cmd = createPolicyRes("lax", 10, spec(RELAXED, 10, 0))
		}
		add(cmd)
		switch {
		case i == len(genResources):
			add(createUnits("remap", 0, nodeNames(5)...))
			add(createUnits("refuse", fsmv1.UnitPolicy_UNIT_POLICY_REFUSE, nodeNames(3)...))
		case i%32 == 31:
			// Bursts of entries on the resources with units, so that
			// they contend, drawn from a source of their own and
			// inserted, so that the other entries stay what they were.
			for j := range 8 {
				add(g.unitCommand(i*8 + j))
			}
			add(g.materializationCommand(i))
		case i%64 == 40:
			// A retention change now and then, from a source of its own.
			add(retentionCommand(rand.New(rand.NewPCG(uint64(i), 0x7e7))))
		}
	}
	return out
}

func seeds() []uint64 {
	if *propSeed != 0 {
		return []uint64{*propSeed}
	}
	out := make([]uint64, *propSeeds)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

var propConfig = Config{DefaultHoldTTL: 100, MaxHoldTTL: 250, Retention: 300, IdempotencyWindow: 500, HistoryLimit: 200}

func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !sink.closed {
		t.Fatal("Persist did not close the sink")
	}
	return sink.Bytes()
}

func restored(t testing.TB, snap []byte) *FSM {
	t.Helper()
	f, err := New(propConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDeterminism applies the same random stream to two state machines (one
// on each exact timeline implementation) and
// to a third restored from a snapshot taken midway: every result and the
// final snapshots must be byte-identical, snapshot→restore→snapshot must
// reproduce the bytes, and nothing may be overbooked after any step.
// Rerun one case with -fsm.seed=N.
func TestDeterminism(t *testing.T) {
	for _, seed := range seeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := &gen{r: rand.New(rand.NewPCG(seed, 0x1ed9e4)), now: 1_000}
			cmds := g.stream(t, *propSteps)
			// Replica b plans on the plain list timeline, a on the indexed
			// one (the default): they must agree byte for byte.
			listConfig := propConfig
			listConfig.Timelines = planner.NewList
			a, b := newHarness(t, propConfig), newHarness(t, listConfig)
			mid := len(cmds) / 2
			var c *FSM
			for i, cmd := range cmds {
				idx := uint64(i + 1)
				ra := a.f.ApplyCommand(idx, cmd)
				rb := b.f.ApplyCommand(idx, cmd)
				if !bytes.Equal(ra, rb) {
					t.Fatalf("seed %d step %d: results differ", seed, i)
				}
				if res, err := DecodeResult(ra); err == nil {
					g.ids = append(g.ids, resultIDs(res)...)
				}
				if c != nil {
					if rc := c.ApplyCommand(idx, cmd); !bytes.Equal(ra, rc) {
						ga, _ := DecodeResult(ra)
						gc, _ := DecodeResult(rc)
						t.Fatalf("seed %d step %d: restored replica answered differently:\n%v\n%v", seed, i, ga, gc)
					}
				}
				checkInvariants(t, a.f)
				if i == mid {
					snap := snapshotBytes(t, a.f)
					c = restored(t, snap)
					if again := snapshotBytes(t, c); !bytes.Equal(snap, again) {
						t.Fatalf("seed %d: snapshot→restore→snapshot changed the bytes", seed)
					}
					checkInvariants(t, c)
				}
			}
			sa, sb, sc := snapshotBytes(t, a.f), snapshotBytes(t, b.f), snapshotBytes(t, c)
			if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sc) {
				t.Fatalf("seed %d: final snapshots differ", seed)
			}
			if again := snapshotBytes(t, restored(t, sa)); !bytes.Equal(sa, again) {
				t.Fatalf("seed %d: final snapshot→restore→snapshot changed the bytes", seed)
			}
		})
	}
}

// TestStreamCoverage guards the generator: the property test is only as
// good as the variety of outcomes it reaches. Over a few streams every
// result status and every event type must occur.
func TestStreamCoverage(t *testing.T) {
	cfg := propConfig
	cfg.HistoryLimit = 100_000
	seen := map[fsmv1.Result_Status]int{}
	events := map[fsmv1.Event_Type]int{}
	coAdmitted := 0
	for seed := range uint64(6) {
		g := &gen{r: rand.New(rand.NewPCG(seed, 0x1ed9e4)), now: 1_000}
		h := newHarness(t, cfg)
		for i, cmd := range g.stream(t, 2000) {
			res, err := DecodeResult(h.f.ApplyCommand(uint64(i+1), cmd))
			if err != nil {
				t.Fatal(err)
			}
			seen[res.GetStatus()]++
			if res.GetCoAdmission() != nil {
				coAdmitted++
			}
			g.ids = append(g.ids, resultIDs(res)...)
		}
		for _, e := range h.f.History(0, 0) {
			events[e.GetType()]++
		}
	}
	for s := range fsmv1.Result_Status_name {
		if s != 0 && seen[fsmv1.Result_Status(s)] == 0 {
			t.Errorf("no %s result in the random streams", fsmv1.Result_Status(s))
		}
	}
	for e := range fsmv1.Event_Type_name {
		if e != 0 && events[fsmv1.Event_Type(e)] == 0 {
			t.Errorf("no %s event in the random streams", fsmv1.Event_Type(e))
		}
	}
	if coAdmitted == 0 {
		t.Error("no admitted co-reservation in the random streams")
	}
	t.Logf("statuses %v, %d co-reservations admitted", seen, coAdmitted)
	t.Logf("events %v", events)
}

// TestConcurrentReads runs every reader and snapshot persistence against a
// running Apply; -race checks the locking and that captured records are
// never changed in place.
func TestConcurrentReads(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(3, 0x1ed9e4)), now: 1_000}
	cmds := g.stream(t, 400)
	h := newHarness(t, propConfig)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-h.f.Notify():
				}
				_, _, _ = h.f.List(Filter{PageSize: 5})
				_, _ = h.f.Get("a")
				_ = h.f.Stats()
				_ = h.f.History(h.f.AppliedIndex(), 10)
				_, _ = h.f.Availability("cpu", 0, h.f.Now()+1000)
				_ = h.f.Resources()
			}
		}()
	}
	// Persist encodes a capture while Apply goes on.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap, err := h.f.Snapshot()
			if err != nil {
				t.Error(err)
				return
			}
			if err := snap.Persist(&memSink{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i, cmd := range cmds {
		h.f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: cmd})
	}
	close(stop)
	wg.Wait()
	if h.f.AppliedIndex() != uint64(len(cmds)) {
		t.Fatalf("applied %d", h.f.AppliedIndex())
	}
}

// TestSnapshotIsItsCapture: Persist writes the state as it was when
// Snapshot captured it, however much is applied in between (the rows'
// tree is a lazy copy that Apply must not reach), and the applies after
// the capture leave the live state as if no snapshot had been taken.
func TestSnapshotIsItsCapture(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(23, 0x5a9)), now: 1_000}
	cmds := g.stream(t, 400)
	for _, cut := range []int{0, 1, 150, 399} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			live, before, after := newHarness(t, propConfig), newHarness(t, propConfig), newHarness(t, propConfig)
			apply := func(f *FSM, from, to int) {
				for i := from; i < to; i++ {
					f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: cmds[i]})
				}
			}
			apply(live.f, 0, cut)
			snap, err := live.f.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			apply(live.f, cut, len(cmds))
			sink := &memSink{}
			if err := snap.Persist(sink); err != nil {
				t.Fatal(err)
			}
			apply(before.f, 0, cut)
			if !bytes.Equal(sink.Bytes(), snapshotBytes(t, before.f)) {
				t.Fatalf("the snapshot captured after %d entries and persisted after %d differs from the state of %d entries", cut, len(cmds), cut)
			}
			apply(after.f, 0, len(cmds))
			if !bytes.Equal(snapshotBytes(t, live.f), snapshotBytes(t, after.f)) {
				t.Fatal("applying after a capture changed the live state")
			}
			allRows(t, live.f.st)
		})
	}
}

func TestApplyBatchMatchesApply(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(11, 0x1ed9e4)), now: 1_000}
	cmds := g.stream(t, 200)
	one, batch := newHarness(t, propConfig), newHarness(t, propConfig)
	var logs []*raft.Log
	for i, cmd := range cmds {
		l := &raft.Log{Index: uint64(2*i + 1), Type: raft.LogCommand, Data: cmd}
		logs = append(logs, l, &raft.Log{Index: uint64(2*i + 2), Type: raft.LogNoop})
	}
	var want []interface{}
	for _, l := range logs {
		want = append(want, one.f.Apply(l))
	}
	got := batch.f.ApplyBatch(logs)
	for i := range want {
		wb, gb := appliedBytes(want[i]), appliedBytes(got[i])
		if !bytes.Equal(wb, gb) || (want[i] == nil) != (got[i] == nil) {
			t.Fatalf("entry %d differs", i)
		}
	}
	if !bytes.Equal(snapshotBytes(t, one.f), snapshotBytes(t, batch.f)) {
		t.Fatal("snapshots differ")
	}
}

func TestRestoreRejectsCorruption(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(5, 0x1ed9e4)), now: 1_000}
	h := newHarness(t, propConfig)
	for i, cmd := range g.stream(t, 100) {
		h.f.ApplyCommand(uint64(i+1), cmd)
	}
	good := snapshotBytes(t, h.f)
	before := snapshotBytes(t, h.f)
	mutate := map[string]func([]byte) []byte{
		"truncated":    func(b []byte) []byte { return b[:len(b)-1] },
		"short header": func(b []byte) []byte { return b[:10] },
		"bad magic":    func(b []byte) []byte { b[0] = 'X'; return b },
		"new version":  func(b []byte) []byte { b[7] = 9; return b },
		"flipped bit":  func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"bad length":   func(b []byte) []byte { b[15]++; return b },
	}
	for name, m := range mutate {
		t.Run(name, func(t *testing.T) {
			bad := m(bytes.Clone(good))
			err := h.f.Restore(io.NopCloser(bytes.NewReader(bad)))
			if err == nil {
				t.Fatal("corrupt snapshot restored")
			}
			if !bytes.Equal(snapshotBytes(t, h.f), before) {
				t.Fatal("failed restore changed the state")
			}
		})
	}
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
