package client

import (
	"context"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// CreateResource adds a resource (operator).
func (c *Client) CreateResource(ctx context.Context, r *ledgerdv1.Resource) (*ledgerdv1.Resource, error) {
	req := &ledgerdv1.CreateRequest{Resource: r, IdempotencyKey: NewKey()}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Resource, error) {
		out, err := ep.resources.Create(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resource, nil
	})
}

// UpdateCapacity changes capacity, over [from, to) when given (operator).
func (c *Client) UpdateCapacity(ctx context.Context, req *ledgerdv1.UpdateCapacityRequest) (*ledgerdv1.Resource, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Resource, error) {
		out, err := ep.resources.UpdateCapacity(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resource, nil
	})
}

// DeleteResource removes a resource (operator).
func (c *Client) DeleteResource(ctx context.Context, name string, force bool) error {
	req := &ledgerdv1.DeleteRequest{Name: name, Force: force, IdempotencyKey: NewKey()}
	_, err := do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (struct{}, error) {
		_, err := ep.resources.Delete(ctx, connect.NewRequest(req))
		return struct{}{}, err
	})
	return err
}

// Resources lists every resource.
func (c *Client) Resources(ctx context.Context) ([]*ledgerdv1.Resource, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) ([]*ledgerdv1.Resource, error) {
		out, err := ep.resources.List(ctx, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{}))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resources, nil
	})
}
