package jepsen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// NewModel returns the porcupine model of a ledger with the given fixed
// capacities and time grain (0: unknown), using decide for admission (nil
// means DefaultDecide), that may drop ended reservations if endedDrops
// (Ledger.EndedDrops). It is porcupine's power-set construction over the
// nondeterministic Ledger.Steps.
func NewModel(capacity map[string]int64, grain int64, decide Decider, endedDrops bool) porcupine.Model {
	if decide == nil {
		decide = DefaultDecide
	}
	l := &Ledger{Capacity: capacity, Decide: decide, Grain: grain, EndedDrops: endedDrops}
	nm := porcupine.NondeterministicModel{
		Init:              func() []any { return []any{State{}} },
		Step:              l.Steps,
		Equal:             Equal,
		Hash:              Hash,
		DescribeOperation: DescribeOperation,
		DescribeState:     DescribeState,
		DescribeOperationMetadata: func(info any) string {
			if info == nil {
				return ""
			}
			return fmt.Sprint(info)
		},
	}
	return nm.ToModel()
}

// Verdict is the linearizability result for one resource group.
type Verdict struct {
	Group     int      `json:"group"`
	Resources []string `json:"resources"`
	Ops       int      `json:"ops"`
	Unknown   int      `json:"unknown"` // indeterminate operations in the group
	// Result is porcupine's answer: "Ok", "Illegal" or "Unknown" (timed out).
	Result  string        `json:"result"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Visual  string        `json:"visualization,omitempty"` // HTML file, written for every non-Ok verdict
	Failure string        `json:"failure,omitempty"`
}

// CheckOptions tunes Check.
type CheckOptions struct {
	// Timeout per group; 0 means no limit. A timed-out group's result is
	// "Unknown", which a campaign reports but does not count as a failure.
	Timeout time.Duration
	// VisualDir, when set, receives lin-group<N>.html for every group whose
	// result is not Ok.
	VisualDir string
	// Decide overrides the admission function (nil: DefaultDecide).
	Decide Decider
}

// Check runs the porcupine linearizability checker over every resource group
// of h and returns one verdict per group. Indeterminate operations are given
// a return time after every other operation in their group (pending
// forever), so the checker may linearize them anywhere after their call,
// including after everything else, which is equivalent to "never happened".
func Check(h History, opt CheckOptions) ([]Verdict, error) {
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	model := NewModel(h.Capacity, h.Grain, opt.Decide, h.EndedDrops)
	parts := h.partition()
	var out []Verdict
	for gi, ops := range parts {
		v := Verdict{Group: gi, Ops: len(ops)}
		if gi < len(h.Groups) {
			v.Resources = h.Groups[gi]
		}
		if len(ops) == 0 {
			v.Result = string(porcupine.Ok)
			out = append(out, v)
			continue
		}
		pops := toPorcupine(ops)
		for _, op := range ops {
			if op.Output.Code == CodeUnknown {
				v.Unknown++
			}
		}
		t0 := time.Now()
		res, info := porcupine.CheckOperationsVerbose(model, pops, opt.Timeout)
		v.Elapsed = time.Since(t0)
		v.Result = string(res)
		if res != porcupine.Ok && opt.VisualDir != "" {
			if err := os.MkdirAll(opt.VisualDir, 0o755); err != nil {
				return out, fmt.Errorf("check: visualization dir: %w", err)
			}
			path := filepath.Join(opt.VisualDir, fmt.Sprintf("lin-group%d.html", gi))
			if err := porcupine.VisualizePath(model, info, path); err != nil {
				return out, fmt.Errorf("check: visualize group %d: %w", gi, err)
			}
			v.Visual = path
		}
		if res == porcupine.Illegal {
			v.Failure = describeFailure(info)
		}
		out = append(out, v)
	}
	return out, nil
}

// toPorcupine converts history entries. Unknown outcomes never return,
// with one sound exception: an indeterminate hold or reserve that a later
// retry with the same key answered definitely is closed at that retry's
// return. Whether the first attempt took effect before the retry (which
// then replayed its result) or after it (a replay that changes nothing),
// its effect lies before the retry returned; closing it keeps the
// checker's search narrow when faults leave many operations open.
func toPorcupine(ops []Op) []porcupine.Operation {
	var last int64
	for _, op := range ops {
		last = max(last, op.Return, op.Call)
	}
	settled := map[OpKind]map[string]int64{} // earliest definite return per create key
	for _, op := range ops {
		if (op.Input.Op == OpHold || op.Input.Op == OpReserve) && op.Output.Code != CodeUnknown && op.Output.Code != CodeFailed {
			m := settled[op.Input.Op]
			if m == nil {
				m = map[string]int64{}
				settled[op.Input.Op] = m
			}
			if r, ok := m[op.Input.ID]; !ok || op.Return < r {
				m[op.Input.ID] = op.Return
			}
		}
	}
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		ret := op.Return
		if op.Output.Code == CodeUnknown {
			ret = last + 1
			if r, ok := settled[op.Input.Op][op.Input.ID]; ok && r > op.Call {
				ret = r
			}
		}
		meta := op.Node
		if op.Err != "" {
			meta += " err=" + op.Err
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client,
			Input:    op.Input,
			Call:     op.Call,
			Output:   op.Output,
			Return:   ret,
			Metadata: meta,
		})
	}
	return out
}

// describeFailure names the operations of the longest partial
// linearization's frontier: the shortest useful pointer into the HTML.
func describeFailure(info porcupine.LinearizationInfo) string {
	lins := info.PartialLinearizationsOperations()
	best := []porcupine.Operation(nil)
	for _, part := range lins {
		for _, l := range part {
			if len(l) > len(best) {
				best = l
			}
		}
	}
	if len(best) == 0 {
		return "no operation could be linearized first"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "longest linearizable prefix has %d ops; last: ", len(best))
	lo := max(0, len(best)-3)
	for i, op := range best[lo:] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// Linearizable reports whether every verdict is Ok (timeouts excluded).
func Linearizable(vs []Verdict) bool {
	for _, v := range vs {
		if v.Result == string(porcupine.Illegal) {
			return false
		}
	}
	return true
}
