package bridge

import (
	"errors"
	"slices"
	"strings"
)

// State is a reservation's materialization state: whether the resource
// manager holds it. The ledger side writes it through the log.
type State string

// The materialization states.
const (
	// StatePending: not (yet) in the manager; a later round will try.
	StatePending State = "pending"
	// StateMaterialized: the manager holds it as desired.
	StateMaterialized State = "materialized"
	// StateFailed: the bridge will not or could not write it; Message
	// says why (the bridge's reason or the manager's own message).
	StateFailed State = "failed"
)

// Status is the materialization state of one desired reservation after a
// round.
type Status struct {
	Name    string
	State   State
	Message string
}

// Statuses derives each desired reservation's state from a round: its
// plan and the results of applying it (results may be shorter than the
// plan's actions when Apply stopped). Desired reservations that are over
// (end not after the round's now) get none; nor do orphans, which nobody
// desires. Sorted by name; pure.
//
//   - refused by Reconcile: failed, with the reason;
//   - no action needed, or every action for it succeeded: materialized;
//   - an action refused by the manager: failed, with its message, except
//     ErrUnavailable: pending;
//   - an action not attempted: pending.
func Statuses(plan Plan, results []Result) []Status {
	out := make([]Status, 0, len(plan.Accepted)+len(plan.Rejected))
	for _, r := range plan.Rejected {
		out = append(out, Status{Name: r.Name, State: StateFailed, Message: r.Reason})
	}
	// The first failure of an action for an accepted name decides.
	failed := map[string]Status{}
	for i, a := range plan.Actions {
		if _, seen := failed[a.Name]; seen {
			continue
		}
		switch {
		case i >= len(results):
			failed[a.Name] = Status{Name: a.Name, State: StatePending, Message: "not attempted: the resource manager was unavailable earlier in the round"}
		case results[i].Err != nil:
			st := StateFailed
			if errors.Is(results[i].Err, ErrUnavailable) {
				st = StatePending
			}
			failed[a.Name] = Status{Name: a.Name, State: st, Message: errMessage(results[i].Err)}
		}
	}
	for _, name := range plan.Accepted {
		if s, ok := failed[name]; ok {
			out = append(out, s)
			continue
		}
		out = append(out, Status{Name: name, State: StateMaterialized})
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// errMessage prefers the manager's own message.
func errMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}
