package client

import (
	"context"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// CreateResourceNodes adds a resource made of the units the Slurm-style
// hostlist nodes names, e.g. "n[1-64]" (operator). r.Units must be empty.
func (c *Client) CreateResourceNodes(ctx context.Context, r *ledgerdv1.Resource, nodes string) (*ledgerdv1.Resource, error) {
	req := &ledgerdv1.CreateRequest{Resource: r, Nodes: nodes, IdempotencyKey: NewKey()}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Resource, error) {
		out, err := ep.resources.Create(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resource, nil
	})
}

// UnitDown takes one unit of a resource out of service over a window
// (operator) and returns the resource and the window's id.
func (c *Client) UnitDown(ctx context.Context, req *ledgerdv1.UnitDownRequest) (*ledgerdv1.UnitDownResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.UnitDownResponse, error) {
		out, err := ep.resources.UnitDown(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// ChangeUnits adds the units of the hostlist add to and removes those of
// the hostlist remove from a resource with units (operator), e.g. add
// "n[65-68]", remove "n3". It returns the resource after the change.
func (c *Client) ChangeUnits(ctx context.Context, name, add, remove string) (*ledgerdv1.Resource, error) {
	req := &ledgerdv1.ChangeUnitsRequest{Name: name, Add: add, Remove: remove, IdempotencyKey: NewKey()}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Resource, error) {
		out, err := ep.resources.ChangeUnits(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resource, nil
	})
}

// UnitUp ends a unit's down window (operator).
func (c *Client) UnitUp(ctx context.Context, req *ledgerdv1.UnitUpRequest) (*ledgerdv1.Resource, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Resource, error) {
		out, err := ep.resources.UnitUp(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resource, nil
	})
}
