package client

import (
	"context"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// CoReserve books every sub-request on one of the candidate resources, or
// none of them, and returns the placements with their probabilities and
// the joint probability. Sub-request i is the reservation "<id>/i". An
// empty idempotency key is filled in (and reused on retries).
func (c *Client) CoReserve(ctx context.Context, req *ledgerdv1.CoReserveRequest) (*ledgerdv1.CoReserveResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.CoReserveResponse, error) {
		out, err := ep.reservations.CoReserve(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}
