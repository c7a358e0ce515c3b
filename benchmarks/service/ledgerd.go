package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// Ledgerd drives a ledgerd cluster through its public API with the Go
// client (idempotency keys, retries on Unavailable, and unless
// Options.NoCoalesce concurrent calls coalesced into Batch calls).
type Ledgerd struct {
	c      *client.Client
	label  string
	client string
	// HoldTTL is the TTL of holds; 0 means 30s.
	HoldTTL time.Duration
}

// NewLedgerd returns a System over the API addresses of one cluster.
func NewLedgerd(addrs []string, opts client.Options, label string) (*Ledgerd, error) {
	c, err := client.New(addrs, opts)
	if err != nil {
		return nil, fmt.Errorf("ledgerd system: %w", err)
	}
	mode := "coalesced"
	if opts.NoCoalesce {
		mode = "unary"
	}
	return &Ledgerd{c: c, label: label, client: mode}, nil
}

// Name implements System.
func (l *Ledgerd) Name() string { return "ledgerd" }

// ClientMode says how operations reach the API: "coalesced" or "unary".
func (l *Ledgerd) ClientMode() string { return l.client }

// Setup implements System: creates the resources (existing ones are kept).
func (l *Ledgerd) Setup(ctx context.Context, resources []string, capacity int64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(resources))
	sem := make(chan struct{}, 16)
	for i, name := range resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := l.c.CreateResource(ctx, &ledgerdv1.Resource{Name: name, Capacity: capacity, Policy: ledgerdv1.Policy_POLICY_REJECT})
			if err != nil && connect.CodeOf(err) != connect.CodeAlreadyExists {
				errs[i] = fmt.Errorf("create resource %s: %w", name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func toShape(s Shape) *ledgerdv1.Shape {
	return &ledgerdv1.Shape{
		Parts:     []*ledgerdv1.ResourceAmount{{Resource: s.Resource, Amount: s.Amount}},
		Duration:  durationpb.New(time.Duration(s.Duration) * time.Millisecond),
		NotBefore: timestamppb.New(time.UnixMilli(s.NotBefore)),
		Deadline:  timestamppb.New(time.UnixMilli(s.Deadline)),
	}
}

// rejected maps an admission refusal (FailedPrecondition with a Rejection
// detail) to ErrRejected and leaves other errors as they are.
func rejected(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) && ce.Code() == connect.CodeFailedPrecondition {
		for _, d := range ce.Details() {
			if v, e := d.Value(); e == nil {
				if _, ok := v.(*ledgerdv1.Rejection); ok {
					return fmt.Errorf("%w: %v", ErrRejected, err)
				}
			}
		}
	}
	return err
}

func booking(r *ledgerdv1.Reservation, s Shape) Booking {
	return Booking{ID: r.GetId(), Shape: s, Start: r.GetStart().AsTime().UnixMilli()}
}

// Reserve implements System.
func (l *Ledgerd) Reserve(ctx context.Context, s Shape) (Booking, error) {
	r, err := l.c.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: toShape(s)})
	if err != nil {
		return Booking{}, rejected(err)
	}
	return booking(r, s), nil
}

func (l *Ledgerd) ttl() *durationpb.Duration {
	if l.HoldTTL > 0 {
		return durationpb.New(l.HoldTTL)
	}
	return durationpb.New(30 * time.Second)
}

// HoldCommit implements System.
func (l *Ledgerd) HoldCommit(ctx context.Context, s Shape) (Booking, error) {
	h, err := l.c.Hold(ctx, &ledgerdv1.HoldRequest{Shape: toShape(s), HoldTtl: l.ttl()})
	if err != nil {
		return Booking{}, rejected(err)
	}
	r, err := l.c.Commit(ctx, h.GetId(), "")
	if err != nil {
		return Booking{}, fmt.Errorf("commit %s: %w", h.GetId(), err)
	}
	return booking(r, s), nil
}

// Modify implements System: the two-phase modify of the API (the new shape
// is held next to the old one) followed by the commit that swaps them.
func (l *Ledgerd) Modify(ctx context.Context, b Booking, s Shape) (Booking, error) {
	if _, err := l.c.Modify(ctx, &ledgerdv1.ModifyRequest{Id: b.ID, Shape: toShape(s), HoldTtl: l.ttl()}); err != nil {
		return b, rejected(err)
	}
	r, err := l.c.Commit(ctx, b.ID, "")
	if err != nil {
		return b, fmt.Errorf("commit modification of %s: %w", b.ID, err)
	}
	return booking(r, s), nil
}

// Cancel implements System.
func (l *Ledgerd) Cancel(ctx context.Context, b Booking) error {
	_, err := l.c.Cancel(ctx, b.ID, "")
	return err
}

// Read implements System (a linearizable Get).
func (l *Ledgerd) Read(ctx context.Context, b Booking) error {
	_, err := l.c.Get(ctx, b.ID)
	return err
}

// ErrorCode implements System: the Connect code.
func (l *Ledgerd) ErrorCode(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline_exceeded"
	}
	return connect.CodeOf(err).String()
}

// Close implements System.
func (l *Ledgerd) Close() error { return nil }
