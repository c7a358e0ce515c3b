package client

import (
	"context"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// ReserveSeries creates a standing reservation and returns it with the
// occurrences booked now and those that could not be. Occurrence i is an
// ordinary reservation "<id>@<local start>". An empty idempotency key is
// filled in (and reused on retries).
func (c *Client) ReserveSeries(ctx context.Context, req *ledgerdv1.ReserveSeriesRequest) (*ledgerdv1.ReserveSeriesResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.ReserveSeriesResponse, error) {
		out, err := ep.series.ReserveSeries(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// GetSeries returns a series and its progress.
func (c *Client) GetSeries(ctx context.Context, id string) (*ledgerdv1.Series, error) {
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Series, error) {
		out, err := ep.series.GetSeries(ctx, connect.NewRequest(&ledgerdv1.GetSeriesRequest{Id: id}))
		if err != nil {
			return nil, err
		}
		return out.Msg.Series, nil
	})
}

// CancelSeries ends a series from req.From on (unset: now).
func (c *Client) CancelSeries(ctx context.Context, req *ledgerdv1.CancelSeriesRequest) (*ledgerdv1.CancelSeriesResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.CancelSeriesResponse, error) {
		out, err := ep.series.CancelSeries(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// ModifySeries replaces a series from req.From on by req.NewId.
func (c *Client) ModifySeries(ctx context.Context, req *ledgerdv1.ModifySeriesRequest) (*ledgerdv1.ModifySeriesResponse, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.ModifySeriesResponse, error) {
		out, err := ep.series.ModifySeries(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}
