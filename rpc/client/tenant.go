package client

import (
	"context"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// SetLimits sets or clears one tenant's limits on one resource
// (operator). An empty idempotency key is filled in (and reused on
// retries).
func (c *Client) SetLimits(ctx context.Context, req *ledgerdv1.SetLimitsRequest) (*ledgerdv1.TenantLimit, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.TenantLimit, error) {
		out, err := ep.tenants.SetLimits(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Limit, nil
	})
}

// GetLimits lists limit entries (and the one in force for a tenant and
// resource when both are given).
func (c *Client) GetLimits(ctx context.Context, req *ledgerdv1.GetLimitsRequest) (*ledgerdv1.GetLimitsResponse, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) (*ledgerdv1.GetLimitsResponse, error) {
		out, err := ep.tenants.GetLimits(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// Usage returns a usage report.
func (c *Client) Usage(ctx context.Context, req *ledgerdv1.UsageRequest) ([]*ledgerdv1.UsageRow, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) ([]*ledgerdv1.UsageRow, error) {
		out, err := ep.tenants.Usage(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Rows, nil
	})
}

// Approve commits a request pending approval (operator). An empty
// idempotency key is filled in (and reused on retries).
func (c *Client) Approve(ctx context.Context, req *ledgerdv1.ApproveRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		out, err := ep.tenants.Approve(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Reservation, nil
	})
}

// Deny refuses a request pending approval with a reason (operator). An
// empty idempotency key is filled in (and reused on retries).
func (c *Client) Deny(ctx context.Context, req *ledgerdv1.DenyRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		out, err := ep.tenants.Deny(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Reservation, nil
	})
}
