package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger/replicated"
)

// FuzzEdgeToReaders drives random public requests through the edge's
// handlers (wire conversion, then the ledger's use of the state
// machine's validator) into Apply, and after each one through every read
// path, JSON included. It fails on a request the edge accepted that Apply
// refused for a reason no state can explain (the edge and Apply
// disagree), and on a read that cannot be answered or encoded.
//
//	go test -tags hashicorpmetrics ./rpc -run '^$' -fuzz FuzzEdgeToReaders -fuzztime 60s
func FuzzEdgeToReaders(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte("\x00\x05\x07\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"))
	f.Add([]byte{1, 9, 9, 9, 9, 9, 9, 9, 2, 9, 9, 9, 9, 9, 9, 9, 3, 9, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		// One input never takes long; a hang says which input.
		watchdog := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("no answer after 30s for input %q", data)) })
		defer watchdog.Stop()
		e := newEdgeFuzz(t)
		g := &fuzzGen{b: data}
		for step := 0; step < 24 && g.more(); step++ {
			e.step(t, g)
			e.readAll(t)
		}
	})
}

// edgeFuzz is one ledger on a log that applies at once, with the
// handlers in front of it.
type edgeFuzz struct {
	log  *checkingLog
	res  *reservations
	rsc  *resources
	ctx  context.Context
	opsC context.Context
	now  time.Time
}

// checkingLog applies every command to the FSM and fails the test when
// Apply refuses one as invalid for a reason that does not depend on the
// state (Check passed it).
type checkingLog struct {
	t     *testing.T
	mu    sync.Mutex
	f     *fsm.FSM
	now   int64
	index uint64
}

func (l *checkingLog) Apply(_ context.Context, b []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cmd, err := fsm.Decode(b)
	if err != nil {
		l.t.Fatalf("the edge proposed a command Decode refuses: %v", err)
	}
	stamped, err := fsm.Stamp(b, l.now)
	if err != nil {
		l.t.Fatal(err)
	}
	l.index++
	out := l.f.ApplyCommand(l.index, stamped)
	res, err := fsm.DecodeResult(out)
	if err != nil {
		l.t.Fatal(err)
	}
	if inv := res.GetInvalid(); res.GetStatus() == fsmv1.Result_STATUS_INVALID && !stateDependent(inv) {
		l.t.Fatalf("the edge accepted %v\nand Apply refused it: %s: %s", cmd, inv.GetField(), inv.GetReason())
	}
	return out, nil
}

func (l *checkingLog) ReadBarrier(context.Context) error { return nil }

// stateDependent reports whether an INVALID of Apply may depend on the
// state (the log time, a resource's capacity or policy, the reservation
// a command names), so that Check could not have refused it.
func stateDependent(inv *fsmv1.Invalid) bool {
	r, f := inv.GetReason(), inv.GetField()
	for _, s := range []string{"log time", "exceeds the capacity", "RELAXED", "not supported", "no resource", "variable job",
		"after the start", "before the booked end", "policy", "MOVE_VARIABLE", "one part", "exactly one"} {
		if strings.Contains(r, s) {
			return true
		}
	}
	// A key reused for another request is the idempotency record's.
	return f == "idempotency_key" || strings.HasPrefix(f, "modify.") && strings.Contains(r, "must be after")
}

func newEdgeFuzz(t *testing.T) *edgeFuzz {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	log := &checkingLog{t: t, f: f, now: now.UnixMilli()}
	led := replicated.New(log, f)
	s, err := New(Options{Ledger: led, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	e := &edgeFuzz{log: log, res: &reservations{s: s, l: led}, rsc: &resources{s: s, l: led}, now: now,
		ctx:  context.WithValue(context.Background(), principalKey{}, Principal{Tenant: "acme"}),
		opsC: context.WithValue(context.Background(), principalKey{}, Principal{Tenant: "ops", Operator: true})}
	for _, r := range []*ledgerdv1.Resource{{Name: "cpu", Capacity: 16}, {Name: "gpu", Capacity: 4}} {
		if _, err := e.rsc.Create(e.opsC, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: r})); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// fuzzGen reads choices from fuzz input; past its end every choice is 0.
type fuzzGen struct {
	b []byte
	i int
}

func (g *fuzzGen) more() bool { return g.i < len(g.b) }

func (g *fuzzGen) byte() byte {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return g.b[g.i-1]
}

func pick[T any](g *fuzzGen, xs ...T) T { return xs[int(g.byte())%len(xs)] }

// The values requests are made of: ordinary ones and every edge the
// validators care about.
func (g *fuzzGen) amount() int64 {
	return pick[int64](g, 1, 2, 4, 16, 0, -1, 17, 1<<62, -1<<63, 1<<63-1)
}

func (g *fuzzGen) name() string {
	return pick(g, "cpu", "gpu", "cpu", "gpu", "", "a b", "x/y", "nope", "é", strings.Repeat("n", 129), "cpu\x00")
}

func (g *fuzzGen) id(e *edgeFuzz) string {
	if ids := e.ids(); len(ids) > 0 && g.byte()%3 != 0 {
		return pick(g, ids...)
	}
	return pick(g, "", "j1", "a b", "r-1", strings.Repeat("i", 129), "c1/0", "日本")
}

func (g *fuzzGen) ts(now time.Time) *timestamppb.Timestamp {
	switch g.byte() % 12 {
	case 0:
		return nil
	case 1:
		return timestamppb.New(now.Add(-time.Hour))
	case 2:
		return timestamppb.New(time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC))
	case 3:
		return timestamppb.New(time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC))
	case 4:
		return &timestamppb.Timestamp{Seconds: 253402300800}
	case 5:
		return &timestamppb.Timestamp{Seconds: -1}
	case 6:
		return &timestamppb.Timestamp{Seconds: 1, Nanos: -1}
	default:
		return timestamppb.New(now.Add(time.Duration(g.byte()) * 10 * time.Minute))
	}
}

func (g *fuzzGen) dur() *durationpb.Duration {
	switch g.byte() % 10 {
	case 0:
		return nil
	case 1:
		return durationpb.New(0)
	case 2:
		return durationpb.New(-time.Second)
	case 3:
		return &durationpb.Duration{Seconds: 315_576_000_000}
	case 4:
		return durationpb.New(time.Microsecond)
	case 5:
		return &durationpb.Duration{Seconds: 1, Nanos: -1}
	default:
		return durationpb.New(time.Duration(g.byte()%8+1) * 15 * time.Minute)
	}
}

func (g *fuzzGen) shape(now time.Time) *ledgerdv1.Shape {
	if g.byte()%16 == 0 {
		return nil
	}
	s := &ledgerdv1.Shape{Duration: g.dur()}
	for range int(g.byte() % 3) {
		s.Parts = append(s.Parts, &ledgerdv1.ResourceAmount{Resource: g.name(), Amount: g.amount()})
	}
	switch g.byte() % 3 {
	case 0:
		s.ExactStart = g.ts(now)
	case 1:
		s.NotBefore, s.Deadline = g.ts(now), g.ts(now)
	}
	return s
}

func (g *fuzzGen) labels() map[string]string {
	switch g.byte() % 5 {
	case 0:
		return map[string]string{"": "x"}
	case 1:
		m := map[string]string{}
		for i := range 65 {
			m[fmt.Sprint(i)] = "v"
		}
		return m
	case 2:
		return map[string]string{"team": strings.Repeat("v", 1025)}
	}
	return map[string]string{"team": "t"}
}

func (g *fuzzGen) key() string { return pick(g, "", "", "k1", "k2", strings.Repeat("k", 129)) }

func (g *fuzzGen) ttl() *durationpb.Duration {
	return pick(g, nil, nil, durationpb.New(time.Minute), durationpb.New(0), durationpb.New(-time.Second), durationpb.New(2*time.Hour))
}

// ids returns the reservation IDs in the ledger.
func (e *edgeFuzz) ids() []string {
	rs, _, err := e.log.f.List(fsm.Filter{PageSize: fsm.MaxPageSize})
	if err != nil {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.GetId()
	}
	return out
}

// step sends one request; every error is an answer, never a failure
// (what is checked is Apply's verdict, in checkingLog, and the reads).
func (e *edgeFuzz) step(t *testing.T, g *fuzzGen) {
	ctx := e.ctx
	var err error
	switch g.byte() % 13 {
	case 0:
		_, err = e.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: g.shape(e.now), HoldTtl: g.ttl(), Labels: g.labels(), IdempotencyKey: g.key()}))
	case 1:
		_, err = e.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: g.shape(e.now), Labels: g.labels(), IdempotencyKey: g.key()}))
	case 2:
		_, err = e.res.Commit(ctx, connect.NewRequest(&ledgerdv1.CommitRequest{Id: g.id(e), IdempotencyKey: g.key()}))
	case 3:
		_, err = e.res.Abort(ctx, connect.NewRequest(&ledgerdv1.AbortRequest{Id: g.id(e), IdempotencyKey: g.key()}))
	case 4:
		_, err = e.res.Cancel(ctx, connect.NewRequest(&ledgerdv1.CancelRequest{Id: g.id(e), IdempotencyKey: g.key()}))
	case 5:
		_, err = e.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{Id: g.id(e), Shape: g.shape(e.now), HoldTtl: g.ttl(), IdempotencyKey: g.key()}))
	case 6:
		_, err = e.res.Complete(ctx, connect.NewRequest(&ledgerdv1.CompleteRequest{Id: g.id(e), At: g.ts(e.now), IdempotencyKey: g.key()}))
	case 7:
		_, err = e.res.SubmitJob(ctx, connect.NewRequest(&ledgerdv1.SubmitJobRequest{Id: pick(g, "", "j1", "r-x"), Resource: g.name(), Amount: g.amount(),
			Duration: g.dur(), NotBefore: g.ts(e.now), Labels: g.labels(), IdempotencyKey: g.key()}))
	case 8:
		c := &ledgerdv1.CoReserveRequest{Id: pick(g, "", "c1", "r-c"), Candidates: []string{g.name(), g.name()}[:1+g.byte()%2], MinJointPermille: pick(g, uint32(0), 500, 1001), IdempotencyKey: g.key()}
		for range int(g.byte() % 3) {
			c.Subs = append(c.Subs, &ledgerdv1.CoSubRequest{Amount: g.amount(), Start: g.ts(e.now), Duration: g.dur()})
		}
		_, err = e.res.CoReserve(ctx, connect.NewRequest(c))
	case 9:
		_, err = e.rsc.Create(e.opsC, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: g.name(), Capacity: g.amount(), Labels: g.labels()}, IdempotencyKey: g.key()}))
	case 10:
		_, err = e.rsc.UpdateCapacity(e.opsC, connect.NewRequest(&ledgerdv1.UpdateCapacityRequest{Name: g.name(), Capacity: g.amount() % 32, From: g.ts(e.now), To: g.ts(e.now), IdempotencyKey: g.key()}))
	case 11:
		_, err = e.rsc.Delete(e.opsC, connect.NewRequest(&ledgerdv1.DeleteRequest{Name: pick(g, "gpu", "nope", "", "a b"), Force: g.byte()%2 == 0, IdempotencyKey: g.key()}))
	case 12:
		// The clock moves: holds expire, reservations start and end.
		e.now = e.now.Add(time.Duration(g.byte()) * time.Minute)
		e.log.mu.Lock()
		e.log.now = e.now.UnixMilli()
		e.log.mu.Unlock()
		e.res.s.opts.Now = func() time.Time { return e.now }
	}
	var ce *connect.Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("a handler returned a bare error: %v", err)
	}
	if connect.CodeOf(err) == connect.CodeInternal {
		t.Fatalf("a request made an internal error: %v", err)
	}
}

// readAll reads through every read path and encodes every answer as
// JSON and binary, as the codecs would.
func (e *edgeFuzz) readAll(t *testing.T) {
	var msgs []proto.Message
	ok := func(what string, m func() proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s failed: %v", what, err)
		}
		msgs = append(msgs, m())
	}
	list, err := e.res.List(e.opsC, connect.NewRequest(&ledgerdv1.ListRequest{PageSize: 1000}))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	msgs = append(msgs, list.Msg)
	for _, r := range list.Msg.Reservations {
		got, err := e.res.Get(e.opsC, connect.NewRequest(&ledgerdv1.GetRequest{Id: r.Id}))
		if err != nil {
			t.Fatalf("Get %q of a listed reservation: %v", r.Id, err)
		}
		msgs = append(msgs, got.Msg)
	}
	h, err := e.res.History(e.opsC, connect.NewRequest(&ledgerdv1.HistoryRequest{Limit: 1000}))
	ok("History", func() proto.Message { return h.Msg }, err)
	rs, err := e.rsc.List(e.opsC, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{}))
	ok("Resources", func() proto.Message { return rs.Msg }, err)
	for _, r := range rs.Msg.Resources {
		a, err := e.res.Availability(e.opsC, connect.NewRequest(&ledgerdv1.AvailabilityRequest{Resource: r.Name,
			From: timestamppb.New(e.now), To: timestamppb.New(time.UnixMilli(fsm.MaxTimeMillis).UTC())}))
		ok("Availability of "+r.Name, func() proto.Message { return a.Msg }, err)
		f, err := e.res.Find(e.ctx, connect.NewRequest(&ledgerdv1.FindRequest{Shape: &ledgerdv1.Shape{
			Parts: []*ledgerdv1.ResourceAmount{{Resource: r.Name, Amount: 1}}, Duration: durationpb.New(time.Hour),
			NotBefore: timestamppb.New(time.Date(9999, 12, 31, 22, 0, 0, 0, time.UTC))}}))
		// Find may refuse (an amount above a capacity of 0), but only
		// for a reason it can name.
		if c := connect.CodeOf(err); err != nil && c != connect.CodeInvalidArgument && c != connect.CodeFailedPrecondition {
			t.Fatalf("Find on %s: %v", r.Name, err)
		} else if err == nil {
			msgs = append(msgs, f.Msg)
		}
	}
	for _, m := range msgs {
		if _, err := protojson.Marshal(m); err != nil {
			t.Fatalf("%T cannot be answered in JSON: %v", m, err)
		}
		if _, err := proto.Marshal(m); err != nil {
			t.Fatalf("%T cannot be answered: %v", m, err)
		}
	}
}

// TestEdgeFuzzSeeds runs the fuzz target's seeds in the default suite.
func TestEdgeFuzzSeeds(t *testing.T) {
	for i, seed := range [][]byte{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f")} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEdgeFuzz(t)
			g := &fuzzGen{b: seed}
			for g.more() {
				e.step(t, g)
				e.readAll(t)
			}
		})
	}
}
