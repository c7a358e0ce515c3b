package rpc

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Bounds of the admission-policy parameters.
const (
	// maxPermille is a probability of 1 in permille.
	maxPermille = 1000
	// maxPushesLimit bounds max_pushes: far beyond any useful starvation
	// guard, it keeps a typo from disabling the guard in practice.
	maxPushesLimit = 1000
)

// checkPolicy validates a policy and its parameters; prefix is the field
// path of the message holding them ("resource." or "").
func checkPolicy(prefix string, p ledgerdv1.Policy, minSuccess, maxPushes uint32) error {
	if _, ok := ledgerdv1.Policy_name[int32(p)]; !ok {
		return &ledger.FieldError{Field: prefix + "policy", Reason: "unknown policy"}
	}
	switch {
	case minSuccess > maxPermille:
		return &ledger.FieldError{Field: prefix + "min_success_permille", Reason: fmt.Sprintf("must be at most %d (a probability of 1)", maxPermille)}
	case minSuccess != 0 && p != ledgerdv1.Policy_POLICY_RELAXED:
		return &ledger.FieldError{Field: prefix + "min_success_permille", Reason: "only POLICY_RELAXED takes a success threshold"}
	case maxPushes > maxPushesLimit:
		return &ledger.FieldError{Field: prefix + "max_pushes", Reason: fmt.Sprintf("must be at most %d", maxPushesLimit)}
	case maxPushes != 0 && p != ledgerdv1.Policy_POLICY_MOVE_VARIABLE:
		return &ledger.FieldError{Field: prefix + "max_pushes", Reason: "only POLICY_MOVE_VARIABLE takes a push bound"}
	}
	return nil
}

// SetPolicy implements ResourceService.SetPolicy.
func (h *resources) SetPolicy(ctx context.Context, req *connect.Request[ledgerdv1.SetPolicyRequest]) (*connect.Response[ledgerdv1.SetPolicyResponse], error) {
	m := req.Msg
	w, err := h.s.operatorWrite(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	if err := checkPolicy("", m.Policy, m.MinSuccessPermille, m.MaxPushes); err != nil {
		return nil, h.s.fail(err)
	}
	out, err := h.l.SetPolicy(ctx, ledger.PolicyArgs{Write: w, Name: m.Name, Policy: m.Policy, MinSuccess: m.MinSuccessPermille, MaxPushes: m.MaxPushes})
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.SetPolicyResponse{Resource: out}), nil
}

// SubmitJob implements ReservationService.SubmitJob.
func (h *reservations) SubmitJob(ctx context.Context, req *connect.Request[ledgerdv1.SubmitJobRequest]) (*connect.Response[ledgerdv1.SubmitJobResponse], error) {
	m := req.Msg
	w, _, err := h.s.write(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	a, err := jobArgs(m, h.s.nowMs())
	if err != nil {
		return nil, h.s.fail(err)
	}
	a.Write = w
	r, err := h.l.SubmitJob(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.SubmitJobResponse{Reservation: r}), nil
}

// jobArgs validates a SubmitJobRequest; now (Unix ms) is the default and
// the floor of not_before.
func jobArgs(m *ledgerdv1.SubmitJobRequest, now int64) (ledger.JobArgs, error) {
	a := ledger.JobArgs{ID: m.Id, Resource: m.Resource, Amount: m.Amount, NotBefore: now, Labels: m.Labels}
	// The ID, the resource, the amount, the end of time and the labels
	// are the ledger's to check (the state machine's Check).
	d, err := durMs("duration", m.Duration)
	if err != nil {
		return a, err
	}
	a.Duration = d
	if m.NotBefore != nil {
		nb, err := tsMs("not_before", m.NotBefore)
		if err != nil {
			return a, err
		}
		a.NotBefore = max(nb, now)
	}
	return a, nil
}
