package fsm

import (
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// harness applies commands to an FSM with consecutive log indexes.
type harness struct {
	t     testing.TB
	f     *FSM
	index uint64
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, f: f}
}

// apply encodes cmd, stamps it with now and applies it.
func (h *harness) apply(now int64, cmd *fsmv1.Command) *fsmv1.Result {
	h.t.Helper()
	b, err := Encode(cmd)
	if err != nil {
		h.t.Fatalf("encode %v: %v", cmd, err)
	}
	if b, err = Stamp(b, now); err != nil {
		h.t.Fatal(err)
	}
	h.index++
	res, err := DecodeResult(h.f.ApplyCommand(h.index, b))
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// must applies cmd and fails unless the status is want.
func (h *harness) must(now int64, want fsmv1.Result_Status, cmd *fsmv1.Command) *fsmv1.Result {
	h.t.Helper()
	res := h.apply(now, cmd)
	if res.GetStatus() != want {
		h.t.Fatalf("%s at %d: status %s (%s), want %s", cmd.GetType(), now, res.GetStatus(), res.GetMessage(), want)
	}
	return res
}

func (h *harness) state(id string) fsmv1.Reservation_State {
	h.t.Helper()
	r, ok := h.f.Get(id)
	if !ok {
		return fsmv1.Reservation_STATE_UNKNOWN
	}
	return r.GetState()
}

// ---- command builders ----

func createRes(name string, capacity int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "op",
		Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: name, Capacity: capacity, Unit: "cores"}}}
}

func updateRes(name string, capacity int64, from, to *int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_UPDATE_RESOURCE, Owner: "op",
		Payload: &fsmv1.Command_UpdateResource{UpdateResource: &fsmv1.UpdateResource{Name: name, Capacity: capacity, FromMillis: from, ToMillis: to}}}
}

func deleteRes(name string) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_DELETE_RESOURCE, Owner: "op",
		Payload: &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: name}}}
}

type reqOpt func(*fsmv1.Command)

func withKey(k string) reqOpt   { return func(c *fsmv1.Command) { c.IdempotencyKey = k } }
func withOwner(o string) reqOpt { return func(c *fsmv1.Command) { c.Owner = o } }
func withTTL(ttl int64) reqOpt  { return func(c *fsmv1.Command) { c.GetRequest().HoldTtlMillis = ttl } }
func withStart(s int64) reqOpt {
	return func(c *fsmv1.Command) { c.GetRequest().StartMillis = proto.Int64(s) }
}
func withWindow(nb, dl int64) reqOpt {
	return func(c *fsmv1.Command) { c.GetRequest().NotBeforeMillis, c.GetRequest().DeadlineMillis = nb, dl }
}
func withParts(ps ...*fsmv1.Part) reqOpt { return func(c *fsmv1.Command) { c.GetRequest().Parts = ps } }

func part(res string, amount int64) *fsmv1.Part { return &fsmv1.Part{Resource: res, Amount: amount} }

func request(typ fsmv1.Command_Type, id, res string, amount, dur int64, opts ...reqOpt) *fsmv1.Command {
	c := &fsmv1.Command{Type: typ, Owner: "alice", Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
		Id: id, Parts: []*fsmv1.Part{part(res, amount)}, DurationMillis: dur,
	}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func hold(id, res string, amount, dur int64, opts ...reqOpt) *fsmv1.Command {
	return request(fsmv1.Command_TYPE_HOLD, id, res, amount, dur, opts...)
}

func reserve(id, res string, amount, dur int64, opts ...reqOpt) *fsmv1.Command {
	return request(fsmv1.Command_TYPE_RESERVE, id, res, amount, dur, opts...)
}

func target(typ fsmv1.Command_Type, id string, opts ...reqOpt) *fsmv1.Command {
	c := &fsmv1.Command{Type: typ, Owner: "alice", Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func commit(id string, opts ...reqOpt) *fsmv1.Command {
	return target(fsmv1.Command_TYPE_COMMIT, id, opts...)
}
func abort(id string, opts ...reqOpt) *fsmv1.Command {
	return target(fsmv1.Command_TYPE_ABORT, id, opts...)
}
func cancel(id string, opts ...reqOpt) *fsmv1.Command {
	return target(fsmv1.Command_TYPE_CANCEL, id, opts...)
}

func modify(id string, parts []*fsmv1.Part, start, end *int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_MODIFY, Owner: "alice", Payload: &fsmv1.Command_Modify{Modify: &fsmv1.Modify{
		Id: id, Parts: parts, StartMillis: start, EndMillis: end,
	}}}
}

func tick() *fsmv1.Command {
	c, err := Decode(TickCommand())
	if err != nil {
		panic(err)
	}
	return c
}

// complete builds a TYPE_COMPLETE command; at == nil means "now".
func complete(id string, at *int64, opts ...reqOpt) *fsmv1.Command {
	c := &fsmv1.Command{Type: fsmv1.Command_TYPE_COMPLETE, Owner: "alice",
		Payload: &fsmv1.Command_Complete{Complete: &fsmv1.Complete{Id: id, AtMillis: at}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// allRows decodes the reservation table, checking the store's own
// invariants on the way: each key is its row's ID, every row is the
// canonical encoding scanRow accepts, and byID holds exactly the stored
// rows in ID order.
func allRows(t testing.TB, s *state) map[string]*fsmv1.Reservation {
	t.Helper()
	out := make(map[string]*fsmv1.Reservation, s.resv.len())
	var sc rowScan
	for id, row := range s.resv.all() {
		if err := scanRow(row, &sc); err != nil || sc.id != id {
			t.Fatalf("row %q: scan %v, id %q", id, err, sc.id)
		}
		if got, ok := s.resv.raw(id); !ok || got != row {
			t.Fatalf("row %q is in the table but its lookup finds %v", id, ok)
		}
		r := decodeRow(row)
		if enc, _ := marshalOpts.Marshal(r); string(enc) != row {
			t.Fatalf("row %q is not its canonical encoding", id)
		}
		out[id] = r
	}
	if s.resv.len() != len(out) {
		t.Fatalf("table counts %d rows, holds %d", s.resv.len(), len(out))
	}
	if s.byID.Len() != len(out) {
		t.Fatalf("byID holds %d rows, table %d", s.byID.Len(), len(out))
	}
	prev := ""
	s.byID.Ascend(func(row string) bool {
		id := rowID(row)
		if prev != "" && id <= prev {
			t.Fatalf("byID holds %q after %q", id, prev)
		}
		prev = id
		if stored, ok := s.resv.raw(id); !ok || stored != row {
			t.Fatalf("byID holds a row of %q that is not the stored one (stored: %v)", id, ok)
		}
		return true
	})
	return out
}
