package client

import (
	"context"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// SetPolicy changes a resource's admission policy (operator). An empty
// idempotency key is filled in (and reused on retries).
func (c *Client) SetPolicy(ctx context.Context, req *ledgerdv1.SetPolicyRequest) (*ledgerdv1.Resource, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Resource, error) {
		out, err := ep.resources.SetPolicy(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resource, nil
	})
}

// SubmitJob submits a variable job and returns it as planned (state
// COMMITTED; its start may still move until it starts). An empty
// idempotency key is filled in (and reused on retries).
func (c *Client) SubmitJob(ctx context.Context, req *ledgerdv1.SubmitJobRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		out, err := ep.reservations.SubmitJob(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Reservation, nil
	})
}

// ReserveMoving is Reserve returning the whole response: the reservation
// and the variable jobs it moved later (POLICY_MOVE_VARIABLE resources).
func (c *Client) ReserveMoving(ctx context.Context, req *ledgerdv1.ReserveRequest) (*ledgerdv1.ReserveResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.ReserveResponse, error) {
		out, err := ep.reservations.Reserve(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// HoldMoving is Hold returning the whole response: the held reservation
// and the variable jobs it moved later (POLICY_MOVE_VARIABLE resources).
func (c *Client) HoldMoving(ctx context.Context, req *ledgerdv1.HoldRequest) (*ledgerdv1.HoldResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.HoldResponse, error) {
		out, err := ep.reservations.Hold(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}
