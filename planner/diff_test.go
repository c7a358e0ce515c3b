package planner

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The differential suite drives the reference model and one Planner per
// timeline implementation with the same operation sequence and compares
// every result, every error class and the full free profile of every
// resource after every step.
//
// Replay a failure with
//
//	go test ./planner -run TestDifferential -seed=N   (or LEDGERD_PLANNER_SEED=N)
//
// and scale the campaign with -diff.seeds and -diff.ops.

var (
	flagSeed     = flag.Uint64("seed", 0, "run the differential test with only this seed (also LEDGERD_PLANNER_SEED)")
	flagDiffSeed = flag.Int("diff.seeds", 200, "number of seeds the differential test runs")
	flagDiffOps  = flag.Int("diff.ops", 500, "operations per seed in the differential test")
)

// factories lists every Timeline implementation that must make exactly the
// decisions of the reference model.
var factories = []struct {
	name string
	f    TimelineFactory
}{
	{"list", NewList},
	{"indexed", NewIndexed},
	// plain hides the optional NextChange method, so the Planner's
	// fallback through Blocks is exercised too.
	{"plain", func(capacity, origin int64) Timeline { return plainTimeline{NewList(capacity, origin)} }},
}

// plainTimeline exposes only the Timeline interface of what it wraps.
type plainTimeline struct{ Timeline }

// chooser is the source of the generator's choices: a seeded PRNG, or the
// bytes of a fuzz input.
type chooser interface {
	intn(n int) int
	i64() int64
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }
func (c randChooser) i64() int64     { return int64(c.r.Uint64()) }

// byteChooser reads choices from a byte string; once it runs out every
// choice is 0.
type byteChooser struct{ b []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

func (c *byteChooser) i64() int64 {
	var buf [8]byte
	n := copy(buf[:], c.b)
	c.b = c.b[n:]
	return int64(binary.LittleEndian.Uint64(buf[:]))
}

type plOpKind int

const (
	plAdd plOpKind = iota
	plRemove
	plSetCap
	plFind
	plOffers
	plReserve
	plBook
	plRelease
	plModify
	plGet
	plAvail
	plUsage
	plAdvance
	plNumOps
)

// plOp is one generated operation; the fields used depend on kind.
type plOp struct {
	kind  plOpKind
	id    string
	name  string
	parts []Part
	req   Request
	a, b  int64 // start/end, from/to, or now
	c     int64 // capacity
	k     int
}

func (o plOp) String() string {
	switch o.kind {
	case plAdd:
		return fmt.Sprintf("AddResource(%q, %d)", o.name, o.c)
	case plRemove:
		return fmt.Sprintf("RemoveResource(%q)", o.name)
	case plSetCap:
		return fmt.Sprintf("SetCapacity(%q, %d, %d, %d)", o.name, o.a, o.b, o.c)
	case plFind:
		return fmt.Sprintf("Find(%+v)", o.req)
	case plOffers:
		return fmt.Sprintf("Offers(%+v, %d)", o.req, o.k)
	case plReserve:
		return fmt.Sprintf("Reserve(%q, %+v)", o.id, o.req)
	case plBook:
		return fmt.Sprintf("Book(%q, %v, %d, %d)", o.id, o.parts, o.a, o.b)
	case plRelease:
		return fmt.Sprintf("Release(%q)", o.id)
	case plModify:
		return fmt.Sprintf("Modify(%q, %v, %d, %d)", o.id, o.parts, o.a, o.b)
	case plGet:
		return fmt.Sprintf("Get(%q)", o.id)
	case plAvail:
		return fmt.Sprintf("Availability(%q, %d, %d)", o.name, o.a, o.b)
	case plUsage:
		return fmt.Sprintf("Usage(%q, %d, %d)", o.name, o.a, o.b)
	case plAdvance:
		return fmt.Sprintf("Advance(%d)", o.a)
	}
	return "?"
}

var resourceNames = []string{"cpu", "gpu", "net"}

// plGen produces operations that mostly make sense for the current state
// (times near the origin, known names and IDs) and sometimes do not.
type plGen struct {
	c      chooser
	origin func() int64
	live   func() []string // sorted IDs of the live bookings
}

func (g plGen) name() string {
	switch g.c.intn(50) {
	case 0:
		return ""
	case 1:
		return "bogus"
	}
	return resourceNames[g.c.intn(len(resourceNames))]
}

// id returns a fresh or unknown ID, rarely an empty one.
func (g plGen) id() string {
	if g.c.intn(60) == 0 {
		return ""
	}
	return "r" + strconv.Itoa(g.c.intn(64))
}

// liveID mostly returns the ID of a live booking.
func (g plGen) liveID() string {
	if ids := g.live(); len(ids) > 0 && g.c.intn(5) != 0 {
		return ids[g.c.intn(len(ids))]
	}
	return g.id()
}

// wild returns an extreme or random int64.
func (g plGen) wild() int64 {
	switch g.c.intn(6) {
	case 0:
		return MaxTime
	case 1:
		return math.MinInt64
	case 2:
		return MaxTime - int64(g.c.intn(4))
	case 3:
		return -1 - int64(g.c.intn(4))
	case 4:
		return 0
	}
	return g.c.i64()
}

func (g plGen) time() int64 {
	if g.c.intn(40) == 0 {
		return g.wild()
	}
	if g.c.intn(30) == 0 {
		return g.origin() - 1 - int64(g.c.intn(5))
	}
	return g.origin() + int64(g.c.intn(120))
}

func (g plGen) amount() int64 {
	switch g.c.intn(30) {
	case 0:
		return 0
	case 1:
		return g.wild()
	case 2:
		return 11 + int64(g.c.intn(5))
	}
	return 1 + int64(g.c.intn(4))
}

func (g plGen) capacity() int64 {
	switch g.c.intn(30) {
	case 0:
		return -1
	case 1:
		return 0
	case 2:
		return g.wild()
	}
	return 1 + int64(g.c.intn(12))
}

func (g plGen) parts() []Part {
	n := 1 + g.c.intn(3)
	if g.c.intn(4) == 0 {
		n = 1
	}
	if g.c.intn(40) == 0 {
		n = 0
	}
	// Distinct resources, in a random order, unless a duplicate or an
	// unknown name is drawn on purpose.
	names := slices.Clone(resourceNames)
	for i := len(names) - 1; i > 0; i-- {
		j := g.c.intn(i + 1)
		names[i], names[j] = names[j], names[i]
	}
	ps := make([]Part, n)
	for i := range ps {
		name := names[i]
		if g.c.intn(25) == 0 {
			name = g.name()
		}
		ps[i] = Part{Resource: name, Amount: g.amount()}
	}
	return ps
}

func (g plGen) request() Request {
	r := Request{Parts: g.parts(), NotBefore: g.time(), Duration: 1 + int64(g.c.intn(30))}
	if g.c.intn(30) == 0 {
		r.Duration = g.wild()
	}
	switch g.c.intn(6) {
	case 0, 1:
		r.Deadline = MaxTime
	case 2:
		r.Deadline = r.NotBefore + int64(g.c.intn(int(min(max(r.Duration, 1), 1<<20))+1))
	case 3:
		r.Deadline = g.wild()
	default:
		r.Deadline = r.NotBefore + r.Duration + int64(g.c.intn(80))
	}
	return r
}

func (g plGen) window() (int64, int64) {
	from := g.time()
	switch g.c.intn(8) {
	case 0:
		return from, MaxTime
	case 1:
		return from, g.wild()
	case 2:
		return from, from - int64(g.c.intn(3))
	}
	return from, from + 1 + int64(g.c.intn(100))
}

func (g plGen) next() plOp {
	// Weights: mostly bookings and searches, some structure changes.
	w := []struct {
		k plOpKind
		n int
	}{
		{plAdd, 2}, {plRemove, 2}, {plSetCap, 5}, {plFind, 12}, {plOffers, 6},
		{plReserve, 22}, {plBook, 14}, {plRelease, 8}, {plModify, 10}, {plGet, 3},
		{plAvail, 3}, {plUsage, 3}, {plAdvance, 4},
	}
	total := 0
	for _, x := range w {
		total += x.n
	}
	pick := g.c.intn(total)
	k := plAdvance
	for _, x := range w {
		if pick < x.n {
			k = x.k
			break
		}
		pick -= x.n
	}
	o := plOp{kind: k}
	switch k {
	case plAdd:
		o.name, o.c = g.name(), g.capacity()
	case plRemove:
		o.name = g.name()
	case plSetCap:
		o.name, o.c = g.name(), g.capacity()
		o.a, o.b = g.window()
	case plFind:
		o.req = g.request()
	case plOffers:
		o.req, o.k = g.request(), g.c.intn(6)
		if g.c.intn(40) == 0 {
			o.k = -1
		}
	case plReserve:
		o.id, o.req = g.id(), g.request()
	case plBook, plModify:
		o.id, o.parts = g.id(), g.parts()
		if o.kind == plModify {
			o.id = g.liveID()
		}
		o.a = g.time()
		o.b = o.a + 1 + int64(g.c.intn(40))
		if g.c.intn(30) == 0 {
			o.b = g.wild()
		}
	case plRelease, plGet:
		o.id = g.liveID()
	case plAvail, plUsage:
		o.name = g.name()
		o.a, o.b = g.window()
	case plAdvance:
		o.a = g.origin() + int64(g.c.intn(12))
		if g.c.intn(200) == 0 {
			o.a = g.wild()
		}
	}
	return o
}

// errClass reduces an error to what must agree between implementations.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return "invalid:" + fe.Field
	}
	var ce *CapacityConflictError
	if errors.As(err, &ce) {
		return fmt.Sprintf("conflict:%s:%v", ce.Resource, ce.Violated)
	}
	for _, s := range []error{ErrInvalid, ErrNoCapacity, ErrUnknownResource, ErrResourceExists,
		ErrDuplicateID, ErrUnknownBooking, ErrInUse, ErrCapacityConflict} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "unclassified: " + err.Error()
}

// result renders an operation's outcome for comparison.
func plApply(o plOp, x interface {
	AddResource(string, int64) error
	RemoveResource(string) error
	SetCapacity(string, int64, int64, int64) error
	Find(Request) (Decision, error)
	Offers(Request, int) ([]int64, error)
	Reserve(string, Request) (Decision, error)
	Book(Booking) error
	Release(string) (Booking, error)
	Modify(string, []Part, int64, int64) error
	Get(string) (Booking, bool)
	Availability(string, int64, int64) ([]Block, error)
	Usage(string, int64, int64) (Usage, error)
	Advance(int64)
}) string {
	var v any
	var err error
	switch o.kind {
	case plAdd:
		err = x.AddResource(o.name, o.c)
	case plRemove:
		err = x.RemoveResource(o.name)
	case plSetCap:
		err = x.SetCapacity(o.name, o.a, o.b, o.c)
	case plFind:
		v, err = x.Find(o.req)
	case plOffers:
		v, err = x.Offers(o.req, o.k)
	case plReserve:
		v, err = x.Reserve(o.id, o.req)
	case plBook:
		err = x.Book(Booking{ID: o.id, Parts: o.parts, Start: o.a, End: o.b})
	case plRelease:
		v, err = x.Release(o.id)
	case plModify:
		err = x.Modify(o.id, o.parts, o.a, o.b)
	case plGet:
		v, _ = x.Get(o.id)
	case plAvail:
		v, err = x.Availability(o.name, o.a, o.b)
	case plUsage:
		v, err = x.Usage(o.name, o.a, o.b)
	case plAdvance:
		x.Advance(o.a)
	}
	if err != nil {
		// Values that come with an error: only a rejected Reserve's
		// Decision is meaningful.
		if d, ok := v.(Decision); ok && errors.Is(err, ErrNoCapacity) {
			return fmt.Sprintf("%s %+v", errClass(err), d)
		}
		return errClass(err)
	}
	return fmt.Sprintf("ok %+v", v)
}

// checkCanonical verifies the canonical form of a full timeline.
func checkCanonical(blocks []Block, origin int64) error {
	if len(blocks) == 0 {
		return errors.New("no blocks")
	}
	if blocks[0].Start != origin {
		return fmt.Errorf("first block starts at %d, origin %d", blocks[0].Start, origin)
	}
	if blocks[len(blocks)-1].End != MaxTime {
		return fmt.Errorf("last block ends at %d", blocks[len(blocks)-1].End)
	}
	for i, b := range blocks {
		if b.Start >= b.End {
			return fmt.Errorf("block %d empty: %+v", i, b)
		}
		if b.Free < 0 {
			return fmt.Errorf("block %d overbooked: %+v", i, b)
		}
		if i > 0 && blocks[i-1].End != b.Start {
			return fmt.Errorf("blocks %d,%d not contiguous", i-1, i)
		}
		if i > 0 && blocks[i-1].Free == b.Free {
			return fmt.Errorf("blocks %d,%d not merged (free %d)", i-1, i, b.Free)
		}
	}
	return nil
}

// runDiff runs ops against the reference and a Planner per factory. It
// returns a description of the first disagreement, or "".
func runDiff(ops func(origin func() int64, live func() []string) (plOp, bool), record func(string)) string {
	ref := newRefModel()
	pls := make([]*Planner, len(factories))
	for i, f := range factories {
		pls[i] = New(f.f)
	}
	origin := func() int64 { return ref.origin }
	live := func() []string {
		ids := make([]string, 0, len(ref.books))
		for _, b := range ref.books {
			ids = append(ids, b.ID)
		}
		slices.Sort(ids)
		return ids
	}
	for step := 0; ; step++ {
		o, ok := ops(origin, live)
		if !ok {
			return ""
		}
		if record != nil {
			record(o.String())
		}
		want := plApply(o, ref)
		for i, p := range pls {
			if got := plApply(o, p); got != want {
				return fmt.Sprintf("step %d %v on %s:\n got  %s\n want %s", step, o, factories[i].name, got, want)
			}
		}
		// Full state comparison.
		wantRes := ref.Resources()
		for i, p := range pls {
			if got := p.Resources(); !reflect.DeepEqual(got, wantRes) {
				return fmt.Sprintf("step %d %v on %s: resources %v, want %v", step, o, factories[i].name, got, wantRes)
			}
			if p.Len() != len(ref.books) {
				return fmt.Sprintf("step %d %v on %s: Len %d, want %d", step, o, factories[i].name, p.Len(), len(ref.books))
			}
			if p.Origin() != ref.origin {
				return fmt.Sprintf("step %d %v on %s: origin %d, want %d", step, o, factories[i].name, p.Origin(), ref.origin)
			}
		}
		for _, ri := range wantRes {
			want := ref.profile(ri.Name)
			for i, p := range pls {
				got, err := p.Availability(ri.Name, ref.origin, MaxTime)
				if err != nil || !slices.Equal(got, want) {
					return fmt.Sprintf("step %d %v on %s: profile of %s\n got  %v (%v)\n want %v", step, o, factories[i].name, ri.Name, got, err, want)
				}
				if err := checkCanonical(got, ref.origin); err != nil {
					return fmt.Sprintf("step %d %v on %s: %s not canonical: %v", step, o, factories[i].name, ri.Name, err)
				}
				tl := p.resources[ri.Name].tl
				if tl.Len() != len(want) || tl.Origin() != ref.origin {
					return fmt.Sprintf("step %d on %s: %s Len %d Origin %d, want %d, %d", step, factories[i].name, ri.Name, tl.Len(), tl.Origin(), len(want), ref.origin)
				}
			}
		}
		// Every so often, continue on a planner rebuilt from a snapshot:
		// the rest of the run then checks that nothing was lost.
		if step%50 == 49 {
			for i, p := range pls {
				snap := p.Snapshot()
				q, err := Restore(factories[i].f, snap)
				if err != nil {
					return fmt.Sprintf("step %d on %s: restore: %v", step, factories[i].name, err)
				}
				if got := q.Snapshot(); !reflect.DeepEqual(got, snap) {
					return fmt.Sprintf("step %d on %s: snapshot of restored planner differs\n got  %+v\n want %+v", step, factories[i].name, got, snap)
				}
				pls[i] = q
				if i > 0 && !reflect.DeepEqual(snap, pls[0].Snapshot()) {
					return fmt.Sprintf("step %d: snapshots of %s and %s differ", step, factories[0].name, factories[i].name)
				}
			}
		}
		if o.kind == plRelease || o.kind == plModify || o.kind == plReserve || o.kind == plBook {
			wb, wok := ref.Get(o.id)
			for i, p := range pls {
				if gb, gok := p.Get(o.id); gok != wok || !reflect.DeepEqual(gb, wb) {
					return fmt.Sprintf("step %d %v on %s: Get %+v %v, want %+v %v", step, o, factories[i].name, gb, gok, wb, wok)
				}
			}
		}
	}
}

// plWarmup adds the three resources so that most operations do something.
func plWarmup() []plOp {
	return []plOp{
		{kind: plAdd, name: "cpu", c: 8},
		{kind: plAdd, name: "gpu", c: 4},
		{kind: plAdd, name: "net", c: 6},
	}
}

func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func seedFromEnv() uint64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	if s := os.Getenv("LEDGERD_PLANNER_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err == nil {
			return v
		}
	}
	return 0
}

func TestDifferential(t *testing.T) {
	seeds, ops := *flagDiffSeed, *flagDiffOps
	switch {
	case testing.Short():
		seeds = min(seeds, 20)
	case raceEnabled && !isFlagSet("diff.seeds"):
		seeds = min(seeds, 100)
	}
	first := uint64(1)
	if s := seedFromEnv(); s != 0 {
		first, seeds = s, 1
	}
	total := 0
	for seed := first; seed < first+uint64(seeds); seed++ {
		g := plGen{c: randChooser{rand.New(rand.NewPCG(seed, 0x1ed6e))}}
		pre := plWarmup()
		n := 0
		var log []string
		msg := runDiff(func(origin func() int64, live func() []string) (plOp, bool) {
			if len(pre) > 0 {
				o := pre[0]
				pre = pre[1:]
				return o, true
			}
			if n == ops {
				return plOp{}, false
			}
			n++
			g.origin, g.live = origin, live
			return g.next(), true
		}, func(s string) { log = append(log, s) })
		total += n
		if msg != "" {
			tail := log[max(0, len(log)-15):]
			t.Fatalf("seed %d (replay with -seed=%d): %s\nlast ops:\n  %s", seed, seed, msg, strings.Join(tail, "\n  "))
		}
	}
	t.Logf("%d seeds, %d operations per factory, factories %d, first seed %d", seeds, total, len(factories), first)
}

// FuzzDifferential decodes the input into an operation sequence and runs
// the differential comparison on it.
func FuzzDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x05\x03\x01\x02\x07\x09\x00\x10\x20\x30\x05\x06\x07\x08"))
	f.Add([]byte(strings.Repeat("\x11\x22\x33\x44\x55\x66\x77\x88\x99", 20)))
	f.Fuzz(func(t *testing.T, data []byte) {
		bc := &byteChooser{b: data}
		g := plGen{c: bc}
		pre := plWarmup()
		var log []string
		msg := runDiff(func(origin func() int64, live func() []string) (plOp, bool) {
			if len(pre) > 0 {
				o := pre[0]
				pre = pre[1:]
				return o, true
			}
			if len(bc.b) == 0 {
				return plOp{}, false
			}
			g.origin, g.live = origin, live
			return g.next(), true
		}, func(s string) { log = append(log, s) })
		if msg != "" {
			t.Fatalf("%s\nops:\n  %s", msg, strings.Join(log, "\n  "))
		}
	})
}
