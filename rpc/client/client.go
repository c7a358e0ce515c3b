package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
)

// Protocol selects the wire protocol.
type Protocol int

// Wire protocols a Client can speak; all three are served on one port.
const (
	ProtocolConnect Protocol = iota
	ProtocolGRPC
	ProtocolGRPCWeb
)

// Options configures a Client. Zero values take the documented defaults.
type Options struct {
	// Token is sent as "Authorization: Bearer <token>" when set.
	Token string
	// TLS enables https to every node (set Certificates for mutual TLS).
	// Addresses without a scheme get https:// when TLS is set, http:// else.
	TLS *tls.Config
	// Protocol is the wire protocol (default Connect).
	Protocol Protocol
	// MaxAttempts bounds tries per call, across nodes (default 8).
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the exponential backoff between
	// tries (defaults 50ms and 2s); each wait is jittered by ±50%.
	BaseBackoff, MaxBackoff time.Duration
	// HTTPClient overrides the transport (tests); TLS is then ignored.
	HTTPClient *http.Client
	// NoCoalesce sends every Hold, Reserve, Commit, Abort, Cancel, Modify
	// and Get as its own call. By default concurrent ones to the same node
	// are sent together as Batch calls (see coalesce.go); results, errors
	// and retries are the same either way, and a node without Batch gets
	// unary calls.
	NoCoalesce bool
	// MaxBatch caps the operations of one Batch call (default 128; the
	// server refuses more than its own limit, 256 by default).
	MaxBatch int
	// MaxInFlight is how many Batch calls may be in flight to one node
	// before further calls queue for the next one (default 1: one call
	// at a time makes the batches largest, and every batch costs a raft
	// round; with 64 callers on 3 nodes, 1 did 6-17 % more operations/s
	// than 2 at 15-25 % less CPU per operation in the default mix).
	MaxInFlight int
}

// endpoint is one node's generated clients.
type endpoint struct {
	addr         string
	reservations ledgerdv1connect.ReservationServiceClient
	resources    ledgerdv1connect.ResourceServiceClient
	cluster      ledgerdv1connect.ClusterServiceClient
	// batch coalesces calls to this node; nil when coalescing is off.
	batch *batcher
}

// Client is a ledgerd client over a list of nodes of one cluster. It is safe
// for concurrent use.
type Client struct {
	opts  Options
	eps   []*endpoint
	next  atomic.Uint64
	hc    *http.Client
	copts []connect.ClientOption
	// leader is the node the last response named as leader: writes go
	// there directly instead of through a follower's forwarding hop.
	leader atomic.Pointer[leaderRef]
}

// leaderRef is a learned leader: its API address as the server named it
// and the endpoint built for it.
type leaderRef struct {
	addr string
	ep   *endpoint
}

// New builds a Client for the given node addresses ("host:port" or URLs).
func New(addrs []string, opts Options) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("client: at least one node address is required")
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 8
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 2 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 128
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 1
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = httpClient(opts.TLS)
	}
	// Requests are small; compressing them costs more CPU than it saves.
	copts := []connect.ClientOption{connect.WithCompressMinBytes(1024)}
	switch opts.Protocol {
	case ProtocolConnect:
	case ProtocolGRPC:
		copts = append(copts, connect.WithGRPC())
	case ProtocolGRPCWeb:
		copts = append(copts, connect.WithGRPCWeb())
	default:
		return nil, fmt.Errorf("client: unknown protocol %d", opts.Protocol)
	}
	c := &Client{opts: opts, hc: hc}
	if opts.Token != "" {
		copts = append(copts, connect.WithInterceptors(bearer(opts.Token)))
	}
	c.copts = append(copts, connect.WithInterceptors(leaderWatch{c}))
	for i, a := range addrs {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("client: address %d is empty", i)
		}
		c.eps = append(c.eps, c.endpoint(a))
	}
	// Spread clients over the nodes.
	c.next.Store(uint64(mrand.IntN(len(c.eps))))
	return c, nil
}

// endpoint builds the generated clients for one address.
func (c *Client) endpoint(a string) *endpoint {
	if !strings.Contains(a, "://") {
		if c.opts.TLS != nil {
			a = "https://" + a
		} else {
			a = "http://" + a
		}
	}
	a = strings.TrimRight(a, "/")
	ep := &endpoint{
		addr:         a,
		reservations: ledgerdv1connect.NewReservationServiceClient(c.hc, a, c.copts...),
		resources:    ledgerdv1connect.NewResourceServiceClient(c.hc, a, c.copts...),
		cluster:      ledgerdv1connect.NewClusterServiceClient(c.hc, a, c.copts...),
	}
	if !c.opts.NoCoalesce {
		// Batch answers run to kilobytes, past the servers' compression
		// threshold, and gzip costs both ends more CPU than it saves on a
		// datacenter network (4-6 % of the CPU of a loaded run), so
		// batches ask for uncompressed answers.
		plain := append(slices.Clone(c.copts), connect.WithAcceptCompression("gzip", nil, nil))
		ep.batch = &batcher{rpc: ledgerdv1connect.NewReservationServiceClient(c.hc, a, plain...), maxBatch: c.opts.MaxBatch, maxInFlight: c.opts.MaxInFlight}
	}
	return ep
}

// leaderEndpoint returns an endpoint for the leader's API address when it
// is known, else the current node.
func (c *Client) leaderEndpoint(ctx context.Context) *endpoint {
	cur := c.eps[c.next.Load()%uint64(len(c.eps))]
	l, err := c.Leader(ctx)
	if err != nil || l.ApiAddress == "" {
		return cur
	}
	return c.endpointFor(l.ApiAddress)
}

// endpointFor returns the configured endpoint for an API address
// ("host:port"), or a new one when the address is not in the list.
func (c *Client) endpointFor(a string) *endpoint {
	for _, ep := range c.eps {
		if strings.HasSuffix(ep.addr, "://"+a) {
			return ep
		}
	}
	return c.endpoint(a)
}

// hinted returns an endpoint for the leader named by an Unavailable
// error's Ledgerd-Leader header, or nil.
func (c *Client) hinted(err error) *endpoint {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	a := ce.Meta().Get(leaderHeader)
	if a == "" {
		return nil
	}
	return c.endpointFor(a)
}

// httpClient speaks HTTP/2 to every node: over TLS with ALPN, or in clear
// text with prior knowledge (h2c), so streams in both directions work.
func httpClient(cfg *tls.Config) *http.Client {
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 5 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	p := new(http.Protocols)
	if cfg != nil {
		p.SetHTTP2(true)
		p.SetHTTP1(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	t.Protocols = p
	return &http.Client{Transport: t}
}

// bearer adds the Authorization header to unary and streaming calls.
type bearer string

// WrapUnary implements connect.Interceptor.
func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

// WrapStreamingClient implements connect.Interceptor.
func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

// WrapStreamingHandler implements connect.Interceptor; servers are not wrapped.
func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// leaderHeader names the leader's API address on responses (rpc.LeaderHeader).
const leaderHeader = "Ledgerd-Leader"

// leaderWatch learns the leader from the header servers put on every
// unary response and error.
type leaderWatch struct{ c *Client }

// WrapUnary implements connect.Interceptor.
func (w leaderWatch) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		var ce *connect.Error
		switch {
		case err == nil:
			w.c.learnLeader(resp.Header().Get(leaderHeader))
		case errors.As(err, &ce):
			w.c.learnLeader(ce.Meta().Get(leaderHeader))
		}
		return resp, err
	}
}

// WrapStreamingClient implements connect.Interceptor; streams pass through.
func (w leaderWatch) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler implements connect.Interceptor; servers are not wrapped.
func (w leaderWatch) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// NewKey returns a fresh random idempotency key.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Retryable reports whether err is worth retrying on another node with the
// same idempotency key: Unavailable from a server (no leader, outcome
// unknown) or any transport failure that did not come from a server (node
// down, connection reset mid-call). Retrying the latter is safe only
// because every call is a read or carries an idempotency key.
func Retryable(err error) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	return ce.Code() == connect.CodeUnavailable || !connect.IsWireError(err)
}

// route says where a call goes first.
type route int

const (
	// spread: the next node in round-robin order, so that a client's reads
	// are spread over the cluster.
	spread route = iota
	// toLeader: the leader the last response named, when known; writes
	// sent there skip a follower's forwarding hop.
	toLeader
)

// pick returns the node for a call's first attempt; retries move on from
// the round-robin position.
func (c *Client) pick(r route) *endpoint {
	if r == toLeader {
		if l := c.leader.Load(); l != nil {
			return l.ep
		}
		return c.eps[c.next.Load()%uint64(len(c.eps))]
	}
	return c.eps[c.next.Add(1)%uint64(len(c.eps))]
}

// learnLeader records the leader a server named (API "host:port"). Only
// configured nodes are used: an advertised address may be one this client
// cannot reach or whose certificate names another host, and writes to a
// leader outside the list simply keep going through a follower.
func (c *Client) learnLeader(a string) {
	if a == "" {
		return
	}
	l := c.leader.Load()
	if l != nil && l.addr == a {
		return
	}
	for _, ep := range c.eps {
		if strings.HasSuffix(ep.addr, "://"+a) {
			c.leader.Store(&leaderRef{addr: a, ep: ep})
			return
		}
	}
	if l != nil {
		c.leader.CompareAndSwap(l, nil)
	}
}

// forgetLeader drops the learned leader if it is ep, which just failed:
// writes go round-robin until a response names the leader again.
func (c *Client) forgetLeader(ep *endpoint) {
	if l := c.leader.Load(); l != nil && l.ep == ep {
		c.leader.CompareAndSwap(l, nil)
	}
}

// do runs fn against nodes, the first chosen by r, then in round-robin
// order, until it succeeds, fails with a non-retryable error, runs out of
// attempts, or ctx ends.
func do[T any](ctx context.Context, c *Client, r route, fn func(*endpoint) (T, error)) (T, error) {
	var zero T
	var last error
	backoff := c.opts.BaseBackoff
	var hinted *endpoint
	for attempt := 0; attempt < c.opts.MaxAttempts; attempt++ {
		var ep *endpoint
		switch {
		case hinted != nil:
			ep, hinted = hinted, nil
		case attempt == 0:
			ep = c.pick(r)
		default:
			ep = c.eps[c.next.Load()%uint64(len(c.eps))]
		}
		v, err := fn(ep)
		if err == nil {
			return v, nil
		}
		last = err
		if !Retryable(err) || ctx.Err() != nil {
			return zero, err
		}
		c.forgetLeader(ep)
		// Follow the server's leader hint once, else move on to the next
		// node (another caller may have done so already).
		hinted = c.hinted(err)
		c.next.Add(1)
		wait := backoff/2 + time.Duration(mrand.Int64N(int64(backoff)))
		backoff = min(2*backoff, c.opts.MaxBackoff)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, fmt.Errorf("client: giving up after %d attempts: %w", attempt+1, errors.Join(ctx.Err(), last))
		case <-t.C:
		}
	}
	return zero, fmt.Errorf("client: giving up after %d attempts: %w", c.opts.MaxAttempts, last)
}

// key returns k, or a fresh key when k is empty.
func key(k string) string {
	if k == "" {
		return NewKey()
	}
	return k
}

// Hold places a hold. An empty idempotency key is filled in (and reused on
// retries).
func (c *Client) Hold(ctx context.Context, req *ledgerdv1.HoldRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Hold{Hold: req}}
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
		return reservationOf(ep.reservations.Complete(ctx, connect.NewRequest(req)))
	})
}

// Modify holds a new shape beside a reservation.
func (c *Client) Modify(ctx context.Context, req *ledgerdv1.ModifyRequest) (*ledgerdv1.Reservation, error) {
	req.IdempotencyKey = key(req.IdempotencyKey)
	op := &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Modify{Modify: req}}
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Reservation, error) {
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
	return do(ctx, c, spread, func(ep *endpoint) (*ledgerdv1.ListResponse, error) {
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
	return do(ctx, c, spread, func(ep *endpoint) (*ledgerdv1.FindResponse, error) {
		r, err := ep.reservations.Find(ctx, connect.NewRequest(&ledgerdv1.FindRequest{Shape: shape}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	})
}

// Offers returns up to k feasible intervals.
func (c *Client) Offers(ctx context.Context, shape *ledgerdv1.Shape, k int) ([]*ledgerdv1.Offer, error) {
	return do(ctx, c, spread, func(ep *endpoint) ([]*ledgerdv1.Offer, error) {
		r, err := ep.reservations.Offers(ctx, connect.NewRequest(&ledgerdv1.OffersRequest{Shape: shape, MaxOffers: int32(k)}))
		if err != nil {
			return nil, err
		}
		return r.Msg.Offers, nil
	})
}

// Availability returns free capacity of a resource over [from, to).
func (c *Client) Availability(ctx context.Context, req *ledgerdv1.AvailabilityRequest) (*ledgerdv1.AvailabilityResponse, error) {
	return do(ctx, c, spread, func(ep *endpoint) (*ledgerdv1.AvailabilityResponse, error) {
		r, err := ep.reservations.Availability(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	})
}

// History returns events from a position on.
func (c *Client) History(ctx context.Context, req *ledgerdv1.HistoryRequest) (*ledgerdv1.HistoryResponse, error) {
	return do(ctx, c, spread, func(ep *endpoint) (*ledgerdv1.HistoryResponse, error) {
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

// CreateResource adds a resource (operator).
func (c *Client) CreateResource(ctx context.Context, r *ledgerdv1.Resource) (*ledgerdv1.Resource, error) {
	req := &ledgerdv1.CreateRequest{Resource: r, IdempotencyKey: NewKey()}
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Resource, error) {
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
	return do(ctx, c, toLeader, func(ep *endpoint) (*ledgerdv1.Resource, error) {
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
	_, err := do(ctx, c, toLeader, func(ep *endpoint) (struct{}, error) {
		_, err := ep.resources.Delete(ctx, connect.NewRequest(req))
		return struct{}{}, err
	})
	return err
}

// Resources lists every resource.
func (c *Client) Resources(ctx context.Context) ([]*ledgerdv1.Resource, error) {
	return do(ctx, c, spread, func(ep *endpoint) ([]*ledgerdv1.Resource, error) {
		out, err := ep.resources.List(ctx, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{}))
		if err != nil {
			return nil, err
		}
		return out.Msg.Resources, nil
	})
}

// Members lists the cluster's servers (operator).
func (c *Client) Members(ctx context.Context) ([]*ledgerdv1.Member, error) {
	return do(ctx, c, spread, func(ep *endpoint) ([]*ledgerdv1.Member, error) {
		out, err := ep.cluster.Members(ctx, connect.NewRequest(&ledgerdv1.MembersRequest{}))
		if err != nil {
			return nil, err
		}
		return out.Msg.Members, nil
	})
}

// Leader returns the current leader (operator).
func (c *Client) Leader(ctx context.Context) (*ledgerdv1.LeaderResponse, error) {
	return do(ctx, c, spread, func(ep *endpoint) (*ledgerdv1.LeaderResponse, error) {
		out, err := ep.cluster.Leader(ctx, connect.NewRequest(&ledgerdv1.LeaderRequest{}))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// TransferLeadership asks the leader to hand over, to target if not empty.
func (c *Client) TransferLeadership(ctx context.Context, target string) error {
	_, err := do(ctx, c, toLeader, func(ep *endpoint) (struct{}, error) {
		_, err := ep.cluster.TransferLeadership(ctx, connect.NewRequest(&ledgerdv1.TransferLeadershipRequest{TargetId: target}))
		return struct{}{}, err
	})
	return err
}

// RemoveServer removes a server from the Raft configuration.
func (c *Client) RemoveServer(ctx context.Context, id string) error {
	_, err := do(ctx, c, toLeader, func(ep *endpoint) (struct{}, error) {
		_, err := ep.cluster.RemoveServer(ctx, connect.NewRequest(&ledgerdv1.RemoveServerRequest{Id: id}))
		return struct{}{}, err
	})
	return err
}

// SaveSnapshot downloads a snapshot into w and returns its version. It is
// not retried: a broken download leaves w partly written.
func (c *Client) SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error) {
	ep := c.eps[c.next.Load()%uint64(len(c.eps))]
	stream, err := ep.cluster.SaveSnapshot(ctx, connect.NewRequest(&ledgerdv1.SaveSnapshotRequest{}))
	if err != nil {
		return 0, fmt.Errorf("client: save snapshot: %w", err)
	}
	defer stream.Close()
	var version uint64
	for stream.Receive() {
		m := stream.Msg()
		if len(m.Chunk) > 0 {
			if _, err := w.Write(m.Chunk); err != nil {
				return 0, fmt.Errorf("client: save snapshot: write: %w", err)
			}
		}
		if m.Version != 0 {
			version = m.Version
		}
	}
	if err := stream.Err(); err != nil {
		return 0, fmt.Errorf("client: save snapshot: %w", err)
	}
	return version, nil
}

// RestoreSnapshot uploads the snapshot read from r to the leader (only the
// leader restores). When r is an io.Seeker (a file, a bytes.Reader) a
// restore that failed with Unavailable — e.g. leadership lost while it was
// being committed — is retried from the start; restoring the same snapshot
// twice ends in the same state. Other readers are tried once.
func (c *Client) RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error) {
	seeker, ok := r.(io.Seeker)
	if !ok {
		return c.restoreOnce(ctx, r)
	}
	origin, err := seeker.Seek(0, io.SeekCurrent)
	if err != nil {
		return c.restoreOnce(ctx, r)
	}
	return do(ctx, c, spread, func(*endpoint) (uint64, error) {
		if _, err := seeker.Seek(origin, io.SeekStart); err != nil {
			return 0, fmt.Errorf("client: restore snapshot: rewind: %w", err)
		}
		return c.restoreOnce(ctx, r)
	})
}

// restoreOnce streams r to the leader once.
func (c *Client) restoreOnce(ctx context.Context, r io.Reader) (uint64, error) {
	ep := c.leaderEndpoint(ctx)
	stream := ep.cluster.RestoreSnapshot(ctx)
	buf := make([]byte, 256<<10)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := stream.Send(&ledgerdv1.RestoreSnapshotRequest{Chunk: bytes.Clone(buf[:n])}); err != nil {
				if _, cerr := stream.CloseAndReceive(); cerr != nil {
					return 0, fmt.Errorf("client: restore snapshot: %w", cerr)
				}
				return 0, fmt.Errorf("client: restore snapshot: send: %w", err)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			_, _ = stream.CloseAndReceive()
			return 0, fmt.Errorf("client: restore snapshot: read: %w", rerr)
		}
	}
	resp, err := stream.CloseAndReceive()
	if err != nil {
		return 0, fmt.Errorf("client: restore snapshot: %w", err)
	}
	return resp.Msg.Version, nil
}
