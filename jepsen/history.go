package jepsen

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Op is one completed entry of a history: an invocation and what came back.
// Times are nanoseconds since the start of the run on one monotonic clock.
// An indeterminate operation has Output.Code == CodeUnknown; its Return is
// when the client gave up, and the checker treats it as never returning.
type Op struct {
	Client int    `json:"client"`
	Node   string `json:"node,omitempty"`
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	Err    string `json:"err,omitempty"`
	// Reason is the ErrorInfo reason of an error answer (OUTCOME_UNKNOWN,
	// NO_LEADER, ...), when the server gave one.
	Reason string `json:"reason,omitempty"`
}

// History is a run's record: the resource capacities the model needs, the
// independent resource groups, and every operation.
type History struct {
	Capacity map[string]int64 `json:"capacity"`
	// Groups partitions the resources; an operation touches one group only.
	Groups [][]string `json:"groups"`
	// Grain is the time grain of every window and duration (0: unknown).
	Grain int64 `json:"grain,omitempty"`
	// EndedDrops says that the cluster may drop ended reservations during
	// the run (it ran with ended_max): a not-found answer about a
	// reservation that has ended is then its drop, not a lost write.
	EndedDrops bool `json:"ended_drops,omitempty"`
	Ops        []Op `json:"ops"`
}

// Recorder collects operations from concurrent clients. The zero value is
// not usable; use NewRecorder. Safe for concurrent use.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder starts the history clock now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now returns nanoseconds since the recorder started (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start returns the wall-clock instant the recorder's clock counts from.
func (r *Recorder) Start() time.Time { return r.start }

// Add appends a completed operation.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the operations recorded so far, sorted by call time.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	out := append([]Op(nil), r.ops...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// LoadHistory reads a JSON history file.
func LoadHistory(path string) (History, error) {
	var h History
	b, err := os.ReadFile(path)
	if err != nil {
		return h, fmt.Errorf("read history: %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("decode history %s: %w", path, err)
	}
	return h, h.Validate()
}

// Save writes the history as indented JSON.
func (h History) Save(path string) error {
	b, err := json.MarshalIndent(h, "", " ")
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// Validate checks that the history is well formed: every resource has a
// positive capacity and belongs to exactly one group, and every operation has
// a known kind, a return not before its call, and parts from one group.
func (h History) Validate() error {
	group := map[string]int{}
	for gi, g := range h.Groups {
		for _, r := range g {
			if _, dup := group[r]; dup {
				return fmt.Errorf("groups[%d]: resource %q in two groups", gi, r)
			}
			if h.Capacity[r] <= 0 {
				return fmt.Errorf("capacity[%q]: must be > 0", r)
			}
			group[r] = gi
		}
	}
	for i, op := range h.Ops {
		switch op.Input.Op {
		case OpHold, OpReserve, OpCommit, OpAbort, OpModify, OpCancel, OpGet, OpFind:
		default:
			return fmt.Errorf("ops[%d].input.op: unknown kind %q", i, op.Input.Op)
		}
		if op.Return < op.Call {
			return fmt.Errorf("ops[%d].return: %d before call %d", i, op.Return, op.Call)
		}
		g := -1
		for j, p := range op.Input.Parts {
			pg, ok := group[p.Resource]
			if !ok {
				return fmt.Errorf("ops[%d].input.parts[%d].resource: %q in no group", i, j, p.Resource)
			}
			if g >= 0 && pg != g {
				return fmt.Errorf("ops[%d].input.parts: resources from two groups", i)
			}
			g = pg
		}
	}
	return nil
}

// partition splits the history into one slice of operations per resource
// group. Operations that name no resources (commit, abort, cancel, get) go to
// the group of the hold, reserve or modify that named the same ID; IDs never
// created anywhere go to group 0, where the model answers not_found.
func (h History) partition() [][]Op {
	group := map[string]int{}
	for gi, g := range h.Groups {
		for _, r := range g {
			group[r] = gi
		}
	}
	n := len(h.Groups)
	if n == 0 {
		n = 1
	}
	idGroup := map[string]int{}
	for _, op := range h.Ops {
		if len(op.Input.Parts) > 0 && op.Input.ID != "" {
			if _, ok := idGroup[op.Input.ID]; !ok {
				idGroup[op.Input.ID] = group[op.Input.Parts[0].Resource]
			}
		}
	}
	out := make([][]Op, n)
	for _, op := range h.Ops {
		if op.Output.Code == CodeFailed {
			continue
		}
		g := 0
		switch {
		case len(op.Input.Parts) > 0:
			g = group[op.Input.Parts[0].Resource]
		default:
			g = idGroup[op.Input.ID]
		}
		out[g] = append(out[g], op)
	}
	return out
}

// Resolve uses what the replicas hold after the run (final: status by
// workload ID, from complete reads of every replica taken after all clients
// stopped and the cluster settled) to settle indeterminate operations that
// provably changed nothing. Each is marked CodeFailed (left out of the
// check) instead of staying pending forever, which keeps porcupine's
// search from trying it at every point:
//
//   - a hold or reserve whose key no later attempt answered definitely and
//     no replica holds never booked anything (a create applied as a
//     rejection leaves no reservation either, and changes nothing);
//   - a cancel of a reservation that did not end CANCELLED did nothing
//     (CANCELLED is reached only by cancel and never left);
//   - a commit of a reservation that ended ABORTED or EXPIRED did nothing
//     (a committed reservation can be neither);
//   - an abort of a reservation that did not end ABORTED did nothing, if
//     no modify of it ever succeeded or was left unknown (so there was no
//     pending modification to drop).
//
// Terminal reservations must be retained longer than the run (the ledger
// keeps them for a day by default); with EndedDrops a missing key may be
// a dropped reservation, so the first rule is not used. It returns the
// number of operations resolved.
func (h *History) Resolve(final map[string]Status) int {
	definite := map[string]bool{}
	modified := map[string]bool{}
	for _, op := range h.Ops {
		switch {
		case (op.Input.Op == OpHold || op.Input.Op == OpReserve) && op.Output.Code != CodeUnknown && op.Output.Code != CodeFailed:
			definite[op.Input.ID] = true
		case op.Input.Op == OpModify && (op.Output.Code == CodeOK || op.Output.Code == CodeUnknown):
			modified[op.Input.ID] = true
		}
	}
	n := 0
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Output.Code != CodeUnknown {
			continue
		}
		st, present := final[op.Input.ID]
		var why string
		switch op.Input.Op {
		case OpHold, OpReserve:
			if !definite[op.Input.ID] && !present && !h.EndedDrops {
				why = "no replica holds this key, so it never booked"
			}
		case OpCancel:
			if present && st != StatusCancelled {
				why = "the reservation did not end CANCELLED"
			}
		case OpCommit:
			if present && (st == StatusAborted || st == StatusExpired) {
				why = "the reservation ended " + string(st)
			}
		case OpAbort:
			if present && st != StatusAborted && !modified[op.Input.ID] {
				why = "the reservation did not end ABORTED and never had a modification"
			}
		}
		if why != "" {
			op.Output.Code = CodeFailed
			op.Err += " (resolved: " + why + ")"
			n++
		}
	}
	return n
}
