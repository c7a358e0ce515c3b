package client

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// Hold places a hold. An empty idempotency key is filled in (and reused on
// retries).
func (c *Client) Hold(ctx context.Context, req *ledgerdv1.HoldRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Hold{Hold: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetHold().GetReservation(), r.GetHold() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Hold(ctx, connect.NewRequest(req)))
		})
	})
}

// Reserve books in one phase.
func (c *Client) Reserve(ctx context.Context, req *ledgerdv1.ReserveRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Reserve{Reserve: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetReserve().GetReservation(), r.GetReserve() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Reserve(ctx, connect.NewRequest(req)))
		})
	})
}

// Commit commits a hold or pending modification; idemKey may be empty.
func (c *Client) Commit(ctx context.Context, id, idemKey string) (*ledgerdv1.Reservation, error) {
	req := &ledgerdv1.CommitRequest{Id: id, IdempotencyKey: key(idemKey)}
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Commit{Commit: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetCommit().GetReservation(), r.GetCommit() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Commit(ctx, connect.NewRequest(req)))
		})
	})
}

// Abort releases a hold or pending modification; idemKey may be empty.
func (c *Client) Abort(ctx context.Context, id, idemKey string) (*ledgerdv1.Reservation, error) {
	req := &ledgerdv1.AbortRequest{Id: id, IdempotencyKey: key(idemKey)}
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Abort{Abort: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetAbort().GetReservation(), r.GetAbort() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Abort(ctx, connect.NewRequest(req)))
		})
	})
}

// Cancel releases a committed reservation; idemKey may be empty.
func (c *Client) Cancel(ctx context.Context, id, idemKey string) (*ledgerdv1.Reservation, error) {
	req := &ledgerdv1.CancelRequest{Id: id, IdempotencyKey: key(idemKey)}
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Cancel{Cancel: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetCancel().GetReservation(), r.GetCancel() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Cancel(ctx, connect.NewRequest(req)))
		})
	})
}

// Complete ends a committed or active reservation early at at (the zero
// time means now) and gives the rest of its interval back; idemKey may be
// empty.
func (c *Client) Complete(ctx context.Context, id string, at time.Time, idemKey string) (*ledgerdv1.Reservation, error) {
	req := &ledgerdv1.CompleteRequest{Id: id, IdempotencyKey: key(idemKey)}
	if !at.IsZero() {
		req.At = timestamppb.New(at)
	}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return reservationOf(ep.reservations.Complete(ctx, connect.NewRequest(req)))
	})
}

// Modify holds a new shape beside a reservation.
func (c *Client) Modify(ctx context.Context, req *ledgerdv1.ModifyRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Modify{Modify: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetModify().GetReservation(), r.GetModify() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Modify(ctx, connect.NewRequest(req)))
		})
	})
}

// Get returns one reservation, as of a linearizable read. It goes to the
// leader like a write: there the read barrier is one heartbeat round and
// is shared with the writes of the same batch, while a follower must ask
// the leader for the commit index and then wait to learn that it is
// committed.
func (c *Client) Get(ctx context.Context, id string) (*ledgerdv1.Reservation, error) {
	req := &ledgerdv1.GetRequest{Id: id}
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Get{Get: req}}
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (*ledgerdv1.Reservation, error) {
		return coalesced(ctx, ep, op, func(r *ledgerdv1.BatchResult) (*ledgerdv1.Reservation, bool) {
			return r.GetGet().GetReservation(), r.GetGet() != nil
		}, func() (*ledgerdv1.Reservation, error) {
			return reservationOf(ep.reservations.Get(ctx, connect.NewRequest(req)))
		})
	})
}

// reservationResponse is a unary response message carrying a reservation.
type reservationResponse[M any] interface {
	*M
	GetReservation() *ledgerdv1.Reservation
}

// reservationOf returns the reservation of a unary response.
func reservationOf[M any, PM reservationResponse[M]](r *connect.Response[M], err error) (*ledgerdv1.Reservation, error) {
	if err != nil {
		return nil, err
	}
	return PM(r.Msg).GetReservation(), nil
}

// List returns one page of reservations.
func (c *Client) List(ctx context.Context, req *ledgerdv1.ListRequest) (*ledgerdv1.ListResponse, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) (*ledgerdv1.ListResponse, error) {
		r, err := ep.reservations.List(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	})
}

// ListAll follows page tokens and returns every matching reservation.
func (c *Client) ListAll(ctx context.Context, req *ledgerdv1.ListRequest) ([]*ledgerdv1.Reservation, error) {
	var all []*ledgerdv1.Reservation
	q := proto.CloneOf(req)
	for {
		page, err := c.List(ctx, q)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Reservations...)
		if page.NextPageToken == "" {
			return all, nil
		}
		q.PageToken = page.NextPageToken
	}
}

// Find returns where a shape would fit, without booking.
func (c *Client) Find(ctx context.Context, shape *ledgerdv1.Shape) (*ledgerdv1.FindResponse, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) (*ledgerdv1.FindResponse, error) {
		r, err := ep.reservations.Find(ctx, connect.NewRequest(&ledgerdv1.FindRequest{Shape: shape}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	})
}

// Offers returns up to k feasible intervals.
func (c *Client) Offers(ctx context.Context, shape *ledgerdv1.Shape, k int) ([]*ledgerdv1.Offer, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) ([]*ledgerdv1.Offer, error) {
		r, err := ep.reservations.Offers(ctx, connect.NewRequest(&ledgerdv1.OffersRequest{Shape: shape, MaxOffers: int32(k)}))
		if err != nil {
			return nil, err
		}
		return r.Msg.Offers, nil
	})
}

// Availability returns free capacity of a resource over [from, to).
func (c *Client) Availability(ctx context.Context, req *ledgerdv1.AvailabilityRequest) (*ledgerdv1.AvailabilityResponse, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) (*ledgerdv1.AvailabilityResponse, error) {
		r, err := ep.reservations.Availability(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	})
}

// History returns events from a position on.
func (c *Client) History(ctx context.Context, req *ledgerdv1.HistoryRequest) (*ledgerdv1.HistoryResponse, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) (*ledgerdv1.HistoryResponse, error) {
		r, err := ep.reservations.History(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	})
}

// Position is a place in the event stream: the next event wanted is the
// first at or after (Version, Index).
type Position struct {
	Version uint64
	Index   uint32
}

// After returns the position just past event e.
func After(e *ledgerdv1.Event) Position { return Position{Version: e.Version, Index: e.Index + 1} }

// testHookWatchProgress, when set by tests, sees every position Watch
// learns from a progress notice.
var testHookWatchProgress func(Position)

// Watch streams events from pos on and calls fn for each, in order. When the
// stream breaks (node down, leader change) it reconnects to the next node
// and resumes just after the last event delivered, so fn sees every event
// exactly once. It returns when ctx ends, fn returns an error, or a
// non-retryable error occurs. A zero pos starts at the current version.
func (c *Client) Watch(ctx context.Context, pos Position, fn func(*ledgerdv1.Event) error) error {
	backoff := c.opts.BaseBackoff
	failures := 0
	for {
		ep := c.eps[c.next.Load()%uint64(len(c.eps))]
		stream, err := ep.reservations.Watch(ctx, connect.NewRequest(&ledgerdv1.WatchRequest{FromVersion: pos.Version, FromIndex: pos.Index}))
		if err == nil {
			for stream.Receive() {
				failures, backoff = 0, c.opts.BaseBackoff
				m := stream.Msg()
				if m.Event != nil {
					if err := fn(m.Event); err != nil {
						_ = stream.Close()
						return err
					}
					pos = After(m.Event)
				} else if m.ProgressVersion > pos.Version {
					pos = Position{Version: m.ProgressVersion}
					if testHookWatchProgress != nil {
						testHookWatchProgress(pos)
					}
				}
			}
			err = stream.Err()
			_ = stream.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !Retryable(err) {
			return err
		}
		failures++
		if failures >= c.opts.MaxAttempts {
			return fmt.Errorf("client: watch: giving up after %d failed reconnects: %w", failures, err)
		}
		c.next.Add(1)
		wait := backoff/2 + time.Duration(mrand.Int64N(int64(backoff)))
		backoff = min(2*backoff, c.opts.MaxBackoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
