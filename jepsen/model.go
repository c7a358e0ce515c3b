package jepsen

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/google/btree"
)

// OpKind names a client operation against the ledger.
type OpKind string

// The operations the workload issues and the model understands.
const (
	OpHold    OpKind = "hold"    // two-phase: prepare a reservation that must be committed
	OpReserve OpKind = "reserve" // one-phase: hold and commit in one step
	OpCommit  OpKind = "commit"  // HELD -> COMMITTED, or swap in a pending modification
	OpAbort   OpKind = "abort"   // HELD -> ABORTED, or drop a pending modification
	OpModify  OpKind = "modify"  // hold a new shape in addition to the old one
	OpCancel  OpKind = "cancel"  // COMMITTED -> CANCELLED
	OpGet     OpKind = "get"     // read one reservation
	OpFind    OpKind = "find"    // read-only earliest-fit search
)

// Code is the coarse outcome of an operation, as the model predicts it and as
// the client adapter classifies the server's answer.
type Code string

// Outcome codes. CodeUnknown marks an indeterminate operation (timeout,
// broken connection, leadership lost): it may or may not have taken effect.
const (
	CodeOK       Code = "ok"
	CodeRejected Code = "rejected"  // admission found no fitting start
	CodeNotFound Code = "not_found" // no reservation with that ID
	CodeConflict Code = "conflict"  // the reservation is in the wrong state
	CodeInvalid  Code = "invalid"   // malformed request
	CodeUnknown  Code = "unknown"   // indeterminate
	// CodeFailed marks an operation refused before it could take effect
	// (connection refused, no leader): it certainly did nothing. The
	// checker leaves such operations out.
	CodeFailed Code = "failed"
)

// Status is a reservation's lifecycle state as seen by Get.
type Status string

// Lifecycle states the model tracks. Holds in the checked workload use TTLs
// longer than the run, so EXPIRED never appears in a checked history; hold
// expiry is verified separately by the invariant checker.
const (
	StatusHeld      Status = "HELD"
	StatusCommitted Status = "COMMITTED"
	StatusAborted   Status = "ABORTED"
	StatusCancelled Status = "CANCELLED"
	StatusExpired   Status = "EXPIRED"
	// ACTIVE and COMPLETED are derived from the clock; the workload books
	// far enough ahead that they appear only in end-of-run reads.
	StatusActive    Status = "ACTIVE"
	StatusCompleted Status = "COMPLETED"
)

// repeat marks, inside the model only, an ok that repeats a transition
// already made; it never appears in a recorded output.
const repeat Status = "repeat"

// Part is one resource's share of a request.
type Part struct {
	Resource string `json:"resource"`
	Amount   int64  `json:"amount"`
}

// Input is one invocation. ID is the reservation the operation creates or
// addresses; for hold and reserve it is also the idempotency key, so a retry
// reuses it. Times are integer milliseconds.
type Input struct {
	Op        OpKind `json:"op"`
	ID        string `json:"id,omitempty"`
	Parts     []Part `json:"parts,omitempty"`
	Duration  int64  `json:"duration,omitempty"`
	NotBefore int64  `json:"not_before,omitempty"`
	Deadline  int64  `json:"deadline,omitempty"`
}

// Output is one completion. Start is the admitted start (hold, reserve,
// modify, find) or the reservation's current start (get); Status is set by get.
type Output struct {
	Code   Code   `json:"code"`
	Start  int64  `json:"start,omitempty"`
	Status Status `json:"status,omitempty"`
}

// shape is the rectangle a reservation occupies: every part over [Start, End).
type shape struct {
	Parts []Part
	Start int64
	End   int64
}

// record is the model's view of one reservation.
type record struct {
	ID     string
	Kind   OpKind // hold or reserve: what created it (for idempotent replays)
	Req    Input  // the creating request, for replay comparison
	First  Output // the first result, returned again to retries
	Status Status // "" for a rejected request (remembered only for replays)
	Shape  shape
	// Pending is the new shape of a two-phase modify, held in addition to
	// Shape until commit (swap) or abort (drop).
	Pending *shape
}

// State is the model's immutable state: reservations by ID, an index of
// the shapes that occupy capacity by end time, and a hash of the whole kept
// up to date. Both trees are copy-on-write (btree Clone), so a step costs
// O(log n) and the states porcupine keeps for backtracking stay valid.
// Step never mutates a State; it returns a new one. The zero value is the
// empty ledger.
type State struct {
	recs *btree.BTreeG[record]
	live *btree.BTreeG[liveShape]
	h    uint64
}

// liveShape is a shape that occupies capacity, keyed by (End, ID, Pending).
type liveShape struct {
	Shape   shape
	ID      string
	Pending bool
}

func lessRecord(a, b record) bool { return a.ID < b.ID }

func lessLive(a, b liveShape) bool {
	if a.Shape.End != b.Shape.End {
		return a.Shape.End < b.Shape.End
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return !a.Pending && b.Pending
}

func (s State) get(id string) (record, bool) {
	if s.recs == nil {
		return record{}, false
	}
	return s.recs.Get(record{ID: id})
}

// Len is the number of reservations (rejected requests included).
func (s State) Len() int {
	if s.recs == nil {
		return 0
	}
	return s.recs.Len()
}

// each calls f for every record in ID order.
func (s State) each(f func(record) bool) {
	if s.recs != nil {
		s.recs.Ascend(btree.ItemIteratorG[record](f))
	}
}

func liveOf(r record) []liveShape {
	if r.Status != StatusHeld && r.Status != StatusCommitted {
		return nil
	}
	out := []liveShape{{Shape: r.Shape, ID: r.ID}}
	if r.Pending != nil {
		out = append(out, liveShape{Shape: *r.Pending, ID: r.ID, Pending: true})
	}
	return out
}

// with returns a copy of s with r inserted or replaced.
func (s State) with(r record) State {
	var recs *btree.BTreeG[record]
	var live *btree.BTreeG[liveShape]
	if s.recs == nil {
		recs, live = btree.NewG(16, lessRecord), btree.NewG(16, lessLive)
	} else {
		recs, live = s.recs.Clone(), s.live.Clone()
	}
	h := s.h
	if old, had := recs.ReplaceOrInsert(r); had {
		h ^= recordHash(old)
		for _, l := range liveOf(old) {
			live.Delete(l)
		}
	}
	h ^= recordHash(r)
	for _, l := range liveOf(r) {
		live.ReplaceOrInsert(l)
	}
	return State{recs: recs, live: live, h: h}
}

// booked lists the shapes that occupy capacity (held and committed
// reservations and pending modifications) and overlap [from, to): the only
// ones an earliest-fit search inside that window can see.
func (s State) booked(from, to int64) []shape {
	if s.live == nil {
		return nil
	}
	var out []shape
	s.live.AscendGreaterOrEqual(liveShape{Shape: shape{End: from + 1}}, func(l liveShape) bool {
		if l.Shape.Start < to {
			out = append(out, l.Shape)
		}
		return true
	})
	return out
}

// Ledger is the sequential specification of ledgerd for one independent group
// of resources: capacities are fixed for the run.
type Ledger struct {
	// Capacity of every resource the workload may name.
	Capacity map[string]int64
	// Decide answers earliest-fit admission for a request given the shapes
	// currently occupying capacity. NewModel wires the planner package.
	Decide Decider
	// Grain, when > 0, is the time grain of every window and duration in
	// the history: all admitted starts are multiples of it past the
	// window's opening. It bounds the starts an indeterminate modify may
	// have chosen (see Steps).
	Grain int64
	// EndedDrops lets the ledger drop a reservation that has ended
	// (aborted, cancelled, expired, completed), as a cluster with
	// ended_max does: a not-found answer about one is read as its drop,
	// after which it is not found again; its first result still answers
	// retries of the request that made it (idempotency records are kept
	// apart from the rows).
	EndedDrops bool
}

// ended reports whether a reservation in status st has ended and may be
// dropped.
func ended(st Status) bool {
	switch st {
	case StatusAborted, StatusCancelled, StatusExpired, StatusCompleted:
		return true
	}
	return false
}

// Decider computes the earliest start of req given the booked shapes. It
// returns ok=false when no start inside the window fits and an error only for
// malformed requests (unknown resource, non-positive amount or duration).
type Decider func(capacity map[string]int64, booked []shape, req Input) (start int64, ok bool, err error)

// step applies in to s and returns the output the sequential ledger produces
// and the new state.
func (l *Ledger) step(s State, in Input) (Output, State) {
	switch in.Op {
	case OpHold, OpReserve:
		if r, ok := s.get(in.ID); ok {
			if r.Kind != in.Op || !sameRequest(r.Req, in) {
				return Output{Code: CodeConflict}, s
			}
			return r.First, s
		}
		start, fits, err := l.Decide(l.Capacity, s.booked(in.NotBefore, in.Deadline), in)
		if err != nil {
			return Output{Code: CodeInvalid}, s
		}
		r := record{ID: in.ID, Kind: in.Op, Req: in}
		if !fits {
			r.First = Output{Code: CodeRejected}
			return r.First, s.with(r)
		}
		r.First = Output{Code: CodeOK, Start: start}
		r.Status = StatusHeld
		if in.Op == OpReserve {
			r.Status = StatusCommitted
		}
		r.Shape = shape{Parts: in.Parts, Start: start, End: start + in.Duration}
		return r.First, s.with(r)
	case OpCommit:
		r, ok := s.get(in.ID)
		if !ok || r.Status == "" {
			return Output{Code: CodeNotFound}, s
		}
		switch {
		case r.Pending != nil:
			r.Shape, r.Pending = *r.Pending, nil
			r.Status = StatusCommitted
		case r.Status == StatusHeld:
			r.Status = StatusCommitted
		case r.Status == StatusCommitted:
			return Output{Code: CodeOK, Start: r.Shape.Start, Status: repeat}, s
		default:
			return Output{Code: CodeConflict}, s
		}
		return Output{Code: CodeOK, Start: r.Shape.Start}, s.with(r)
	case OpAbort:
		r, ok := s.get(in.ID)
		if !ok || r.Status == "" {
			return Output{Code: CodeNotFound}, s
		}
		switch {
		case r.Pending != nil:
			r.Pending = nil
		case r.Status == StatusHeld:
			r.Status = StatusAborted
		case r.Status == StatusAborted:
			return Output{Code: CodeOK, Status: repeat}, s
		default:
			return Output{Code: CodeConflict}, s
		}
		return Output{Code: CodeOK}, s.with(r)
	case OpCancel:
		r, ok := s.get(in.ID)
		if !ok || r.Status == "" {
			return Output{Code: CodeNotFound}, s
		}
		switch r.Status {
		case StatusCommitted:
			r.Status, r.Pending = StatusCancelled, nil
		case StatusCancelled:
			return Output{Code: CodeOK, Status: repeat}, s
		default:
			return Output{Code: CodeConflict}, s
		}
		return Output{Code: CodeOK}, s.with(r)
	case OpModify:
		r, ok := s.get(in.ID)
		if !ok || r.Status == "" {
			return Output{Code: CodeNotFound}, s
		}
		if r.Status != StatusCommitted || r.Pending != nil {
			return Output{Code: CodeConflict}, s
		}
		start, fits, err := l.Decide(l.Capacity, s.booked(in.NotBefore, in.Deadline), in)
		if err != nil {
			return Output{Code: CodeInvalid}, s
		}
		if !fits {
			return Output{Code: CodeRejected}, s
		}
		r.Pending = &shape{Parts: in.Parts, Start: start, End: start + in.Duration}
		return Output{Code: CodeOK, Start: start}, s.with(r)
	case OpGet:
		r, ok := s.get(in.ID)
		if !ok || r.Status == "" {
			return Output{Code: CodeNotFound}, s
		}
		return Output{Code: CodeOK, Start: r.Shape.Start, Status: r.Status}, s
	case OpFind:
		start, fits, err := l.Decide(l.Capacity, s.booked(in.NotBefore, in.Deadline), in)
		switch {
		case err != nil:
			return Output{Code: CodeInvalid}, s
		case !fits:
			return Output{Code: CodeRejected}, s
		}
		return Output{Code: CodeOK, Start: start}, s
	}
	return Output{Code: CodeInvalid}, s
}

// predict is step with the internal repeat marker removed: the output a
// correct ledger would return.
func (l *Ledger) predict(s State, in Input) (Output, State) {
	out, next := l.step(s, in)
	if out.Status == repeat {
		out.Status = ""
	}
	return out, next
}

func repeatTransition(op OpKind, want, out Output) bool {
	if out.Code != CodeConflict || want.Code != CodeOK {
		return false
	}
	return want.Status == repeat && (op == OpCommit || op == OpAbort || op == OpCancel)
}

func sameRequest(a, b Input) bool {
	return a.Duration == b.Duration && a.NotBefore == b.NotBefore && a.Deadline == b.Deadline &&
		slices.Equal(a.Parts, b.Parts)
}

// Steps is the porcupine step function of the nondeterministic model: it
// returns every state the ledger can be in after the operation produced the
// observed output (none when it could not have).
//
// Most operations are deterministic: the observed output must match the
// model's prediction, and an unknown output is linearized as having taken
// effect (the checker may also place it after every other operation, which
// is the world in which it never did). Modify is the exception: the API
// finds the earliest start of the new shape on a read and then holds that
// exact interval in a second step, so an ok modify is accepted at any start
// inside its window where the new shape fits at the linearization point, a
// rejected modify is always possible (the schedule changed in between, or
// the search failed before the reservation's state was looked at), and
// an unknown modify forks into "not applied" and "applied at each feasible
// start".
func (l *Ledger) Steps(state any, input any, output any) []any {
	s := state.(State)
	in := input.(Input)
	out := output.(Output)
	if out.Code == CodeFailed {
		return []any{s}
	}
	if l.EndedDrops && out.Code == CodeNotFound && in.Op != OpHold && in.Op != OpReserve && in.Op != OpFind {
		if r, ok := s.get(in.ID); ok && ended(r.Status) {
			// Dropped (at the latest here): not found from now on, like
			// a rejected request, which is remembered only for replays.
			r.Status, r.Pending = "", nil
			return []any{s.with(r)}
		}
	}
	if in.Op == OpModify && out.Code == CodeRejected {
		// The API searches for the new shape's start before the ledger
		// looks at the reservation's state, so a rejection can come back
		// whatever the state; it never changes anything.
		return []any{s}
	}
	want, next := l.step(s, in)
	if in.Op == OpModify && (want.Code == CodeOK || want.Code == CodeRejected) {
		return l.modifySteps(s, in, out, want)
	}
	if out.Code == CodeUnknown {
		return []any{next}
	}
	if repeatTransition(in.Op, want, out) {
		// Committing a committed reservation, aborting an aborted one or
		// cancelling a cancelled one changes nothing; whether the ledger
		// answers ok (idempotent) or "wrong state" is an API choice the
		// model does not pin.
		return []any{next}
	}
	if want.Status == repeat {
		want.Status = ""
	}
	if want.Code != CodeOK {
		if want.Code == out.Code {
			return []any{next}
		}
		return nil
	}
	if want == out {
		return []any{next}
	}
	return nil
}

// modifySteps handles a modify of a committed reservation without a
// pending modification (the only case where the request reaches admission).
func (l *Ledger) modifySteps(s State, in Input, out, want Output) []any {
	cur, _ := s.get(in.ID)
	withPending := func(start int64) State {
		r := cur
		r.Pending = &shape{Parts: in.Parts, Start: start, End: start + in.Duration}
		return s.with(r)
	}
	booked := s.booked(in.NotBefore, in.Deadline)
	fits := func(start int64) bool {
		return start >= in.NotBefore && start+in.Duration <= in.Deadline &&
			fitsAt(l.Capacity, booked, in.Parts, start, start+in.Duration)
	}
	switch out.Code {
	case CodeRejected:
		return []any{s}
	case CodeOK:
		if fits(out.Start) {
			return []any{withPending(out.Start)}
		}
		return nil
	case CodeUnknown:
		states := []any{s}
		if l.Grain <= 0 {
			if want.Code == CodeOK {
				states = append(states, withPending(want.Start))
			}
			return states
		}
		for start := in.NotBefore; start+in.Duration <= in.Deadline; start += l.Grain {
			if fits(start) {
				states = append(states, withPending(start))
			}
		}
		return states
	}
	return nil
}

// Equal reports whether two states hold the same reservations.
func Equal(a, b any) bool {
	x, y := a.(State), b.(State)
	if x.h != y.h || x.Len() != y.Len() {
		return false
	}
	if x.Len() == 0 {
		return true
	}
	var xs []record
	x.each(func(r record) bool { xs = append(xs, r); return true })
	i, same := 0, true
	y.each(func(r record) bool {
		same = recordEqual(xs[i], r)
		i++
		return same
	})
	return same
}

func recordEqual(a, b record) bool {
	if a.ID != b.ID || a.Kind != b.Kind || a.Status != b.Status || a.First != b.First ||
		!sameRequest(a.Req, b.Req) || !shapeEqual(a.Shape, b.Shape) {
		return false
	}
	if (a.Pending == nil) != (b.Pending == nil) {
		return false
	}
	return a.Pending == nil || shapeEqual(*a.Pending, *b.Pending)
}

func shapeEqual(a, b shape) bool {
	return a.Start == b.Start && a.End == b.End && slices.Equal(a.Parts, b.Parts)
}

// Hash is consistent with Equal (equal states hash alike); it is kept up to
// date by every step, so it costs nothing here.
func Hash(state any) uint64 { return state.(State).h }

// recordHash mixes the fields Equal compares that matter for decisions.
func recordHash(r record) uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	h.Write([]byte(r.ID))
	h.Write([]byte{0})
	h.Write([]byte(r.Status))
	h.Write([]byte{0})
	h.Write([]byte(r.First.Code))
	put(r.First.Start)
	put(r.Shape.Start)
	put(r.Shape.End)
	if r.Pending != nil {
		put(r.Pending.Start)
		put(r.Pending.End)
	}
	return h.Sum64()
}

// DescribeState renders a state for the HTML visualization.
func DescribeState(state any) string {
	var b strings.Builder
	state.(State).each(func(r record) bool {
		if r.Status == "" {
			return true
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s:%s@[%d,%d)", r.ID, r.Status, r.Shape.Start, r.Shape.End)
		if r.Pending != nil {
			fmt.Fprintf(&b, "+[%d,%d)", r.Pending.Start, r.Pending.End)
		}
		return true
	})
	return "{" + b.String() + "}"
}

// DescribeOperation renders one operation for the HTML visualization.
func DescribeOperation(input any, output any) string {
	in, out := input.(Input), output.(Output)
	var b strings.Builder
	b.WriteString(string(in.Op))
	b.WriteString("(")
	if in.ID != "" {
		b.WriteString(in.ID)
	}
	for _, p := range in.Parts {
		fmt.Fprintf(&b, " %s=%d", p.Resource, p.Amount)
	}
	if in.Duration != 0 {
		fmt.Fprintf(&b, " len=%d in [%d,%d]", in.Duration, in.NotBefore, in.Deadline)
	}
	b.WriteString(") -> ")
	b.WriteString(string(out.Code))
	if out.Code == CodeOK && (in.Op != OpCommit && in.Op != OpAbort && in.Op != OpCancel) {
		fmt.Fprintf(&b, " @%d", out.Start)
	}
	if out.Status != "" {
		b.WriteString(" " + string(out.Status))
	}
	return b.String()
}
