package jepsen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckTestdata runs the checker over checked-in histories whose verdict
// is known, so a checker that never fails (or always fails) is caught.
func TestCheckTestdata(t *testing.T) {
	tests := []struct {
		file string
		want bool // linearizable
	}{
		{"linearizable.json", true},
		{"nonlinearizable-overbook.json", false},
		{"nonlinearizable-stale-read.json", false},
		{"nonlinearizable-retry-twice.json", false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			h, err := LoadHistory(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			vs, err := Check(h, CheckOptions{VisualDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if got := Linearizable(vs); got != tt.want {
				t.Fatalf("linearizable = %v, want %v; verdicts %+v", got, tt.want, vs)
			}
			for _, v := range vs {
				if v.Result == "Illegal" {
					if v.Visual == "" {
						t.Fatalf("group %d illegal but no visualization written", v.Group)
					}
					if st, err := os.Stat(v.Visual); err != nil || st.Size() == 0 {
						t.Fatalf("visualization %s missing or empty: %v", v.Visual, err)
					}
					if v.Failure == "" {
						t.Fatalf("group %d illegal without a failure description", v.Group)
					}
				}
			}
		})
	}
}

// TestModelStep pins the sequential semantics transition by transition.
func TestModelStep(t *testing.T) {
	l := &Ledger{Capacity: map[string]int64{"gpu": 2, "cpu": 4}, Decide: ReferenceDecide}
	gpu := func(n int64) []Part { return []Part{{Resource: "gpu", Amount: n}} }
	hold := func(id string, n, d, nb, dl int64) Input {
		return Input{Op: OpHold, ID: id, Parts: gpu(n), Duration: d, NotBefore: nb, Deadline: dl}
	}
	op := func(k OpKind, id string) Input { return Input{Op: k, ID: id} }
	steps := []struct {
		in   Input
		want Output
	}{
		{hold("a", 2, 10, 0, 100), Output{Code: CodeOK, Start: 0}},
		{hold("a", 2, 10, 0, 100), Output{Code: CodeOK, Start: 0}},  // idempotent replay
		{hold("a", 1, 10, 0, 100), Output{Code: CodeConflict}},      // same key, other request
		{hold("b", 2, 10, 0, 15), Output{Code: CodeRejected}},       // window too tight
		{hold("c", 1, 10, 0, 100), Output{Code: CodeOK, Start: 10}}, // after a
		{hold("d", 3, 10, 0, 100), Output{Code: CodeRejected}},      // exceeds capacity
		{Input{Op: OpHold, ID: "e", Parts: []Part{{Resource: "tape", Amount: 1}}, Duration: 1, Deadline: 9}, Output{Code: CodeInvalid}},
		{op(OpGet, "b"), Output{Code: CodeNotFound}},        // rejected requests are not reservations
		{op(OpCancel, "a"), Output{Code: CodeConflict}},     // cancel needs COMMITTED
		{op(OpCommit, "a"), Output{Code: CodeOK, Start: 0}}, // HELD -> COMMITTED
		{op(OpCommit, "a"), Output{Code: CodeOK, Start: 0}}, // idempotent
		{op(OpAbort, "a"), Output{Code: CodeConflict}},      // cannot abort committed
		{op(OpAbort, "c"), Output{Code: CodeOK}},            // HELD -> ABORTED
		{op(OpCommit, "c"), Output{Code: CodeConflict}},     // aborted stays aborted
		{op(OpGet, "c"), Output{Code: CodeOK, Start: 10, Status: StatusAborted}},
		{Input{Op: OpModify, ID: "a", Parts: gpu(2), Duration: 5, NotBefore: 0, Deadline: 100}, Output{Code: CodeOK, Start: 10}},
		{Input{Op: OpModify, ID: "a", Parts: gpu(1), Duration: 5, NotBefore: 0, Deadline: 100}, Output{Code: CodeConflict}}, // one pending at a time
		{Input{Op: OpFind, Parts: gpu(1), Duration: 5, NotBefore: 0, Deadline: 100}, Output{Code: CodeOK, Start: 15}},       // old + new both held
		{op(OpAbort, "a"), Output{Code: CodeOK}},                                                                            // drops the modification
		{op(OpGet, "a"), Output{Code: CodeOK, Start: 0, Status: StatusCommitted}},                                           // original slot kept
		{Input{Op: OpModify, ID: "a", Parts: gpu(1), Duration: 5, NotBefore: 20, Deadline: 100}, Output{Code: CodeOK, Start: 20}},
		{op(OpCommit, "a"), Output{Code: CodeOK, Start: 20}}, // swap
		{Input{Op: OpFind, Parts: gpu(2), Duration: 10, NotBefore: 0, Deadline: 100}, Output{Code: CodeOK, Start: 0}},
		{op(OpCancel, "a"), Output{Code: CodeOK}},
		{op(OpCancel, "a"), Output{Code: CodeOK}}, // idempotent
		{op(OpGet, "a"), Output{Code: CodeOK, Start: 20, Status: StatusCancelled}},
		{op(OpCommit, "zz"), Output{Code: CodeNotFound}},
		{Input{Op: OpReserve, ID: "r", Parts: []Part{{Resource: "gpu", Amount: 2}, {Resource: "cpu", Amount: 4}}, Duration: 10, NotBefore: 0, Deadline: 100}, Output{Code: CodeOK, Start: 0}},
		{Input{Op: OpFind, Parts: []Part{{Resource: "cpu", Amount: 1}}, Duration: 10, NotBefore: 0, Deadline: 100}, Output{Code: CodeOK, Start: 10}},
	}
	s := State{}
	for i, st := range steps {
		nexts := l.Steps(s, st.in, st.want)
		if len(nexts) != 1 {
			got, _ := l.predict(s, st.in)
			t.Fatalf("step %d %s: model says %+v, want %+v", i, DescribeOperation(st.in, st.want), got, st.want)
		}
		// Any other definite output must be refused (modify excepted: its
		// start is free within the window, see TestModelModify), and
		// unknown accepted.
		wrong := st.want
		wrong.Start++
		if st.want.Code != CodeOK {
			wrong = Output{Code: CodeOK}
		}
		if st.in.Op != OpModify && len(l.Steps(s, st.in, wrong)) > 0 {
			t.Fatalf("step %d: model accepted wrong output %+v", i, wrong)
		}
		if len(l.Steps(s, st.in, Output{Code: CodeUnknown})) == 0 {
			t.Fatalf("step %d: model refused an unknown outcome", i)
		}
		s = nexts[0].(State)
	}
}

// TestModelModify pins the find-then-hold semantics of modify: any start in
// the window where the new shape fits is acceptable, a rejection is always
// possible, an unknown outcome forks over the feasible starts, and modify
// needs a COMMITTED reservation without a pending modification.
func TestModelModify(t *testing.T) {
	l := &Ledger{Capacity: map[string]int64{"gpu": 2}, Decide: ReferenceDecide, Grain: 10}
	s := State{}
	for _, in := range []Input{
		{Op: OpReserve, ID: "a", Parts: []Part{{Resource: "gpu", Amount: 1}}, Duration: 10, NotBefore: 0, Deadline: 10},
		{Op: OpReserve, ID: "b", Parts: []Part{{Resource: "gpu", Amount: 2}}, Duration: 10, NotBefore: 20, Deadline: 30},
		{Op: OpHold, ID: "h", Parts: []Part{{Resource: "gpu", Amount: 1}}, Duration: 10, NotBefore: 0, Deadline: 10},
	} {
		_, s = l.predict(s, in)
	}
	mod := Input{Op: OpModify, ID: "a", Parts: []Part{{Resource: "gpu", Amount: 2}}, Duration: 10, NotBefore: 0, Deadline: 50}
	tests := []struct {
		name string
		in   Input
		out  Output
		n    int // number of possible next states
	}{
		{"earliest start", mod, Output{Code: CodeOK, Start: 10}, 1},
		{"later feasible start", mod, Output{Code: CodeOK, Start: 30}, 1},
		{"start where it does not fit", mod, Output{Code: CodeOK, Start: 20}, 0},
		{"start outside the window", mod, Output{Code: CodeOK, Start: 60}, 0},
		{"rejection always possible", mod, Output{Code: CodeRejected}, 1},
		{"unknown forks: not applied, at 10, at 30, at 40", mod, Output{Code: CodeUnknown}, 4},
		{"held reservation", Input{Op: OpModify, ID: "h", Parts: mod.Parts, Duration: 10, NotBefore: 0, Deadline: 50}, Output{Code: CodeConflict}, 1},
		{"search fails before the state is looked at", Input{Op: OpModify, ID: "h", Parts: mod.Parts, Duration: 10, NotBefore: 0, Deadline: 50}, Output{Code: CodeRejected}, 1},
		{"held reservation cannot be modified", Input{Op: OpModify, ID: "h", Parts: mod.Parts, Duration: 10, NotBefore: 0, Deadline: 50}, Output{Code: CodeOK, Start: 10}, 0},
		{"unknown id", Input{Op: OpModify, ID: "zz", Parts: mod.Parts, Duration: 10, NotBefore: 0, Deadline: 50}, Output{Code: CodeNotFound}, 1},
	}
	for _, tt := range tests {
		if got := len(l.Steps(s, tt.in, tt.out)); got != tt.n {
			t.Errorf("%s: %d next states, want %d", tt.name, got, tt.n)
		}
	}
}

// TestSequentialHistories is a property test: a history of non-overlapping
// operations whose outputs come from the model itself is linearizable, and
// changing one definite output makes it illegal (with no concurrency there
// is exactly one linearization to try).
func TestSequentialHistories(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	caps := map[string]int64{"a": 3, "b": 2}
	l := &Ledger{Capacity: caps, Decide: ReferenceDecide}
	for iter := range 30 {
		h := History{Capacity: caps, Groups: [][]string{{"a", "b"}}}
		s := State{}
		var ids []string
		for i := range 25 {
			in := randomInput(rng, ids, i)
			if in.Op == OpHold || in.Op == OpReserve {
				ids = append(ids, in.ID)
			}
			out, next := l.predict(s, in)
			s = next
			h.Ops = append(h.Ops, Op{Client: i % 3, Input: in, Output: out, Call: int64(i * 10), Return: int64(i*10 + 5)})
		}
		vs, err := Check(h, CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !Linearizable(vs) {
			t.Fatalf("iter %d: sequential model history judged illegal: %+v", iter, vs)
		}
		// Corrupt one definite output.
		i := rng.IntN(len(h.Ops))
		o := &h.Ops[i].Output
		if o.Code == CodeOK {
			o.Code = CodeNotFound
		} else {
			o.Code = CodeOK
			o.Start = 12345
		}
		vs, err = Check(h, CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if Linearizable(vs) {
			t.Fatalf("iter %d: corrupted op %d (%s) still judged linearizable", iter, i, DescribeOperation(h.Ops[i].Input, h.Ops[i].Output))
		}
	}
}

func randomInput(rng *rand.Rand, ids []string, i int) Input {
	pick := func() string {
		if len(ids) == 0 || rng.IntN(10) == 0 {
			return fmt.Sprintf("missing%d", i)
		}
		return ids[rng.IntN(len(ids))]
	}
	parts := func() []Part {
		switch rng.IntN(3) {
		case 0:
			return []Part{{Resource: "a", Amount: 1 + rng.Int64N(3)}}
		case 1:
			return []Part{{Resource: "b", Amount: 1 + rng.Int64N(2)}}
		}
		return []Part{{Resource: "a", Amount: 1 + rng.Int64N(2)}, {Resource: "b", Amount: 1}}
	}
	shape := func(in Input) Input {
		in.Parts = parts()
		in.Duration = 1 + rng.Int64N(10)
		in.NotBefore = rng.Int64N(20)
		in.Deadline = in.NotBefore + in.Duration + rng.Int64N(20)
		return in
	}
	switch k := rng.IntN(9); k {
	case 0, 1:
		return shape(Input{Op: OpHold, ID: fmt.Sprintf("r%d", i)})
	case 2:
		return shape(Input{Op: OpReserve, ID: fmt.Sprintf("r%d", i)})
	case 3:
		return Input{Op: OpCommit, ID: pick()}
	case 4:
		return Input{Op: OpAbort, ID: pick()}
	case 5:
		return Input{Op: OpCancel, ID: pick()}
	case 6:
		return shape(Input{Op: OpModify, ID: pick()})
	case 7:
		return Input{Op: OpGet, ID: pick()}
	default:
		return shape(Input{Op: OpFind})
	}
}

// TestHistoryValidate checks that malformed histories are refused with an
// error naming the field.
func TestHistoryValidate(t *testing.T) {
	base := func() History {
		return History{Capacity: map[string]int64{"a": 1, "b": 1}, Groups: [][]string{{"a"}, {"b"}}}
	}
	tests := []struct {
		name string
		mut  func(*History)
		want string
	}{
		{"unknown op", func(h *History) { h.Ops = []Op{{Input: Input{Op: "fly"}}} }, "ops[0].input.op"},
		{"return before call", func(h *History) { h.Ops = []Op{{Input: Input{Op: OpGet}, Call: 5, Return: 1}} }, "ops[0].return"},
		{"cross group", func(h *History) {
			h.Ops = []Op{{Input: Input{Op: OpFind, Parts: []Part{{Resource: "a", Amount: 1}, {Resource: "b", Amount: 1}}}}}
		}, "ops[0].input.parts"},
		{"no group", func(h *History) {
			h.Ops = []Op{{Input: Input{Op: OpFind, Parts: []Part{{Resource: "c", Amount: 1}}}}}
		}, "ops[0].input.parts[0].resource"},
		{"zero capacity", func(h *History) { h.Capacity["a"] = 0 }, `capacity["a"]`},
		{"two groups", func(h *History) { h.Groups = [][]string{{"a"}, {"a", "b"}} }, "groups[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := base()
			tt.mut(&h)
			err := h.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error naming %q", err, tt.want)
			}
		})
	}
}

// TestResolve: only indeterminate operations that the final state proves
// changed nothing are settled.
func TestResolve(t *testing.T) {
	mk := func(op OpKind, id string, c Code) Op {
		return Op{Input: Input{Op: op, ID: id}, Output: Output{Code: c}}
	}
	h := History{Ops: []Op{
		mk(OpHold, "gone", CodeUnknown),       // 0 absent everywhere: resolved
		mk(OpHold, "kept", CodeUnknown),       // 1 a replica holds it
		mk(OpReserve, "retried", CodeUnknown), // 2 a retry answered: closure handles it
		mk(OpReserve, "retried", CodeRejected),
		mk(OpCancel, "kept", CodeUnknown), // 4 kept ended COMMITTED: cancel did nothing
		mk(OpCancel, "c", CodeUnknown),    // 5 c ended CANCELLED: maybe this one
		mk(OpCommit, "ab", CodeUnknown),   // 6 ab ended ABORTED: commit did nothing
		mk(OpCommit, "kept", CodeUnknown), // 7 may have committed kept
		mk(OpAbort, "kept", CodeUnknown),  // 8 kept not ABORTED, never modified: nothing
		mk(OpAbort, "mod", CodeUnknown),   // 9 mod had a modification it may have dropped
		mk(OpModify, "mod", CodeOK),       // 10
		mk(OpAbort, "ab", CodeUnknown),    // 11 ab ended ABORTED: maybe this one
	}}
	final := map[string]Status{"kept": StatusCommitted, "c": StatusCancelled, "ab": StatusAborted, "mod": StatusCommitted, "retried": StatusCommitted}
	if n := h.Resolve(final); n != 4 {
		t.Errorf("resolved %d, want 4", n)
	}
	resolved := map[int]bool{0: true, 4: true, 6: true, 8: true}
	for i, op := range h.Ops {
		if got := op.Output.Code == CodeFailed; got != resolved[i] {
			t.Errorf("op %d (%s %s): resolved=%v, want %v", i, op.Input.Op, op.Input.ID, got, resolved[i])
		}
	}
}
