package jepsen

import (
	"strings"
	"testing"
	"time"
)

// TestModelEndedDrops: with EndedDrops a not-found answer about an ended
// reservation is its drop (and it stays not found; a retry of the request
// that made it still gets its first result), while a not-found answer about
// a live one stays illegal. Without EndedDrops every such answer is
// illegal.
func TestModelEndedDrops(t *testing.T) {
	gpu := []Part{{Resource: "gpu", Amount: 1}}
	reserve := Input{Op: OpReserve, ID: "r", Parts: gpu, Duration: 10, Deadline: 100}
	hold := Input{Op: OpHold, ID: "h", Parts: gpu, Duration: 10, Deadline: 100}
	op := func(k OpKind, id string) Input { return Input{Op: k, ID: id} }
	notFound := Output{Code: CodeNotFound}
	for _, drops := range []bool{false, true} {
		l := &Ledger{Capacity: map[string]int64{"gpu": 2}, Decide: ReferenceDecide, EndedDrops: drops}
		s := State{}
		apply := func(in Input, out Output) bool {
			nexts := l.Steps(s, in, out)
			if len(nexts) == 0 {
				return false
			}
			s = nexts[0].(State)
			return true
		}
		for _, st := range []struct {
			in  Input
			out Output
		}{
			{reserve, Output{Code: CodeOK, Start: 0}},
			{hold, Output{Code: CodeOK, Start: 0}},
		} {
			if !apply(st.in, st.out) {
				t.Fatalf("drops=%v: %s refused", drops, DescribeOperation(st.in, st.out))
			}
		}
		// Live reservations are never dropped.
		for _, in := range []Input{op(OpGet, "r"), op(OpCancel, "r"), op(OpGet, "h"), op(OpCommit, "h")} {
			if len(l.Steps(s, in, notFound)) != 0 {
				t.Fatalf("drops=%v: not found accepted for live %s", drops, DescribeOperation(in, notFound))
			}
		}
		if !apply(op(OpCancel, "r"), Output{Code: CodeOK}) || !apply(op(OpAbort, "h"), Output{Code: CodeOK}) {
			t.Fatalf("drops=%v: cancel or abort refused", drops)
		}
		// Ended: a not-found answer is a drop only with EndedDrops.
		if got := apply(op(OpGet, "r"), notFound); got != drops {
			t.Fatalf("drops=%v: not found for cancelled r accepted: %v", drops, got)
		}
		if got := apply(op(OpCommit, "h"), notFound); got != drops {
			t.Fatalf("drops=%v: not found for aborted h accepted: %v", drops, got)
		}
		if !drops {
			continue
		}
		// Dropped stays dropped: found again is illegal.
		if len(l.Steps(s, op(OpGet, "r"), Output{Code: CodeOK, Start: 0, Status: StatusCancelled})) != 0 {
			t.Fatal("a dropped reservation was found again")
		}
		if !apply(op(OpCancel, "r"), notFound) {
			t.Fatal("cancel of a dropped reservation: not found refused")
		}
		// A retry of the request that made it answers its first result.
		if !apply(reserve, Output{Code: CodeOK, Start: 0}) {
			t.Fatal("a retry of the dropped reservation's request did not get its first result")
		}
		// Its drop changed no capacity (it had ended).
		if !apply(Input{Op: OpFind, Parts: []Part{{Resource: "gpu", Amount: 2}}, Duration: 10, Deadline: 100}, Output{Code: CodeOK, Start: 0}) {
			t.Fatal("a dropped reservation still holds capacity")
		}
	}
}

// TestInvariantsEndedDrops: with EndedDrops, an acknowledged reservation
// that may have ended (cancelled, aborted, or a hold never committed) may
// be missing from the final lists; a committed one never cancelled may not.
// Without EndedDrops both are violations; and Resolve no longer reads a
// missing key as a create that never booked.
func TestInvariantsEndedDrops(t *testing.T) {
	mk := func(op OpKind, id string, c Code) Op {
		return Op{Input: Input{Op: op, ID: id, Parts: []Part{{Resource: "gpu", Amount: 1}}}, Output: Output{Code: c}}
	}
	h := History{Capacity: map[string]int64{"gpu": 4}, Ops: []Op{
		mk(OpReserve, "cancelled", CodeOK), mk(OpCancel, "cancelled", CodeOK),
		mk(OpHold, "aborted", CodeOK), mk(OpAbort, "aborted", CodeOK),
		mk(OpHold, "expired", CodeOK),
		mk(OpReserve, "kept", CodeOK),
	}}
	lists := map[string][]Reservation{"n1": nil, "n2": nil}
	for _, drops := range []bool{false, true} {
		h.EndedDrops = drops
		var durable InvariantResult
		for _, r := range CheckInvariants(h, lists, InvariantOptions{Now: time.Now()}) {
			if r.Name == "acked-writes-durable" {
				durable = r
			}
		}
		missing := map[string]bool{}
		for _, v := range durable.Violations {
			for _, id := range []string{"cancelled", "aborted", "expired", "kept"} {
				if strings.Contains(v, " "+id+" missing") {
					missing[id] = true
				}
			}
		}
		for _, id := range []string{"cancelled", "aborted", "expired"} {
			if missing[id] == drops {
				t.Errorf("drops=%v: missing %s reported: %v", drops, id, missing[id])
			}
		}
		if !missing["kept"] {
			t.Errorf("drops=%v: a missing committed reservation was not reported", drops)
		}
	}

	r := History{EndedDrops: true, Ops: []Op{mk(OpReserve, "gone", CodeUnknown)}}
	if n := r.Resolve(map[string]Status{}); n != 0 {
		t.Fatalf("with drops, Resolve settled %d creates whose key no replica holds", n)
	}
	r.EndedDrops = false
	if n := r.Resolve(map[string]Status{}); n != 1 {
		t.Fatalf("without drops, Resolve settled %d, want 1", n)
	}
}
