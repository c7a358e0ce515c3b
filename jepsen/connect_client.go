package jepsen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/rpc"
)

// labelKey is the label that carries the workload ID on every reservation
// the harness makes, so that end-of-run reads map server IDs back.
const labelKey = "jepsen-id"

// IDMap maps workload IDs to server-assigned reservation IDs. One IDMap is
// shared by the clients of every node. Safe for concurrent use.
type IDMap struct {
	mu sync.Mutex
	m  map[string]string
}

// NewIDMap returns an empty map.
func NewIDMap() *IDMap { return &IDMap{m: map[string]string{}} }

func (m *IDMap) set(id, server string) {
	m.mu.Lock()
	m.m[id] = server
	m.mu.Unlock()
}

func (m *IDMap) get(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[id]
	return s, ok
}

// ConnectClient is the Client for one real ledgerd node, over the public
// Connect API (ReservationService, ResourceService, ClusterService).
type ConnectClient struct {
	res   ledgerdv1connect.ReservationServiceClient
	rsc   ledgerdv1connect.ResourceServiceClient
	cl    ledgerdv1connect.ClusterServiceClient
	ser   ledgerdv1connect.SeriesServiceClient
	ids   *IDMap
	ttl   time.Duration
	names func(raftAddr, apiAddr, id string) string
	// token and tls are the credentials it was made with; the batch
	// client to the same node uses them too.
	token string
	tls   *tls.Config
}

// ConnectOptions configures NewConnectClient.
type ConnectOptions struct {
	// Token, when set, is sent as a bearer token.
	Token string
	// TLS, when set, makes the client speak https with it (roots and
	// client certificate); nil speaks plain http to an insecure node.
	TLS *tls.Config
	// HoldTTL is the TTL of every hold and modification; longer than the
	// run so that expiry never interferes with the linearizability check.
	HoldTTL time.Duration
	// NodeName maps the leader's addresses or Raft ID, as the API reports
	// them, to a node name of the harness.
	NodeName func(raftAddr, apiAddr, id string) string
}

// NewConnectClient returns a client for the node whose API listens at
// addr (host:port). Connections are not pooled across nodes and each
// request is bounded by the caller's context.
func NewConnectClient(addr string, ids *IDMap, opt ConnectOptions) *ConnectClient {
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		TLSClientConfig:     opt.TLS.Clone(), // the transport may add ALPN protocols to it
		TLSHandshakeTimeout: time.Second,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     5 * time.Second,
	}}
	var opts []connect.ClientOption
	if opt.Token != "" {
		opts = append(opts, connect.WithInterceptors(bearer(opt.Token)))
	}
	if opt.HoldTTL <= 0 {
		opt.HoldTTL = time.Hour
	}
	if opt.NodeName == nil {
		opt.NodeName = func(_, api, _ string) string { return api }
	}
	base := "http://" + addr
	if opt.TLS != nil {
		base = "https://" + addr
	}
	return &ConnectClient{
		res:   ledgerdv1connect.NewReservationServiceClient(hc, base, opts...),
		rsc:   ledgerdv1connect.NewResourceServiceClient(hc, base, opts...),
		cl:    ledgerdv1connect.NewClusterServiceClient(hc, base, opts...),
		ser:   ledgerdv1connect.NewSeriesServiceClient(hc, base, opts...),
		ids:   ids,
		ttl:   opt.HoldTTL,
		names: opt.NodeName,
		token: opt.Token,
		tls:   opt.TLS,
	}
}

func bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}
}

func toShape(in Input) *ledgerdv1.Shape {
	s := &ledgerdv1.Shape{
		Duration:  durationpb.New(time.Duration(in.Duration) * time.Millisecond),
		NotBefore: timestamppb.New(time.UnixMilli(in.NotBefore)),
		Deadline:  timestamppb.New(time.UnixMilli(in.Deadline)),
	}
	for _, p := range in.Parts {
		s.Parts = append(s.Parts, &ledgerdv1.ResourceAmount{Resource: p.Resource, Amount: p.Amount})
	}
	return s
}

func ms(t *timestamppb.Timestamp) int64 {
	if t == nil {
		return 0
	}
	return t.AsTime().UnixMilli()
}

var statusOf = map[ledgerdv1.ReservationState]Status{
	ledgerdv1.ReservationState_RESERVATION_STATE_HELD:      StatusHeld,
	ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED: StatusCommitted,
	ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE:    StatusActive,
	ledgerdv1.ReservationState_RESERVATION_STATE_COMPLETED: StatusCompleted,
	ledgerdv1.ReservationState_RESERVATION_STATE_ABORTED:   StatusAborted,
	ledgerdv1.ReservationState_RESERVATION_STATE_EXPIRED:   StatusExpired,
	ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED: StatusCancelled,
}

// Invoke implements Client.
func (c *ConnectClient) Invoke(ctx context.Context, in Input) (Output, error) {
	var (
		r   *ledgerdv1.Reservation
		err error
	)
	write := in.Op != OpGet && in.Op != OpFind
	var sid string
	if in.Op != OpHold && in.Op != OpReserve && in.Op != OpFind {
		var ok bool
		if sid, ok = c.ids.get(in.ID); !ok {
			return Output{Code: CodeFailed}, fmt.Errorf("%s %s: server id unknown", in.Op, in.ID)
		}
	}
	labels := map[string]string{labelKey: in.ID}
	switch in.Op {
	case OpHold:
		var resp *connect.Response[ledgerdv1.HoldResponse]
		resp, err = c.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: toShape(in), HoldTtl: durationpb.New(c.ttl), Labels: labels, IdempotencyKey: in.ID}))
		if err == nil {
			r = resp.Msg.GetReservation()
		}
	case OpReserve:
		var resp *connect.Response[ledgerdv1.ReserveResponse]
		resp, err = c.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: toShape(in), Labels: labels, IdempotencyKey: in.ID}))
		if err == nil {
			r = resp.Msg.GetReservation()
		}
	case OpCommit:
		var resp *connect.Response[ledgerdv1.CommitResponse]
		resp, err = c.res.Commit(ctx, connect.NewRequest(&ledgerdv1.CommitRequest{Id: sid}))
		if err == nil {
			return Output{Code: CodeOK, Start: ms(resp.Msg.GetReservation().GetStart())}, nil
		}
	case OpAbort:
		_, err = c.res.Abort(ctx, connect.NewRequest(&ledgerdv1.AbortRequest{Id: sid}))
		if err == nil {
			return Output{Code: CodeOK}, nil
		}
	case OpCancel:
		_, err = c.res.Cancel(ctx, connect.NewRequest(&ledgerdv1.CancelRequest{Id: sid}))
		if err == nil {
			return Output{Code: CodeOK}, nil
		}
	case OpModify:
		var resp *connect.Response[ledgerdv1.ModifyResponse]
		resp, err = c.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{Id: sid, Shape: toShape(in), HoldTtl: durationpb.New(c.ttl)}))
		if err == nil {
			return Output{Code: CodeOK, Start: ms(resp.Msg.GetReservation().GetPending().GetStart())}, nil
		}
	case OpGet:
		var resp *connect.Response[ledgerdv1.GetResponse]
		resp, err = c.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: sid}))
		if err == nil {
			g := resp.Msg.GetReservation()
			return Output{Code: CodeOK, Start: ms(g.GetStart()), Status: statusOf[g.GetState()]}, nil
		}
	case OpFind:
		var resp *connect.Response[ledgerdv1.FindResponse]
		resp, err = c.res.Find(ctx, connect.NewRequest(&ledgerdv1.FindRequest{Shape: toShape(in)}))
		if err == nil {
			if !resp.Msg.GetFits() {
				return Output{Code: CodeRejected}, nil
			}
			return Output{Code: CodeOK, Start: ms(resp.Msg.GetStart())}, nil
		}
	default:
		return Output{Code: CodeInvalid}, fmt.Errorf("op %q: not supported", in.Op)
	}
	if err == nil {
		c.ids.set(in.ID, r.GetId())
		return Output{Code: CodeOK, Start: ms(r.GetStart())}, nil
	}
	return classify(err, write), err
}

// classify turns an API error into an outcome code. Domain refusals are
// definite. For writes, only errors that prove the request never took
// effect (connection refused, no leader) are "failed"; everything else —
// timeouts, broken connections, OUTCOME_UNKNOWN — is unknown. A failed
// read carries no information and is "failed".
func classify(err error, write bool) Output {
	reason := ""
	var ce *connect.Error
	if errors.As(err, &ce) {
		for _, d := range ce.Details() {
			if v, derr := d.Value(); derr == nil {
				if info, ok := v.(*errdetails.ErrorInfo); ok {
					reason = info.GetReason()
				}
			}
		}
	}
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument:
		return Output{Code: CodeInvalid}
	case connect.CodeNotFound:
		return Output{Code: CodeNotFound}
	case connect.CodeFailedPrecondition:
		if _, ok := rpc.Rejection(err); ok || reason == rpc.ReasonNoCapacity {
			return Output{Code: CodeRejected}
		}
		return Output{Code: CodeConflict}
	case connect.CodeAlreadyExists:
		return Output{Code: CodeConflict}
	case connect.CodePermissionDenied, connect.CodeUnauthenticated, connect.CodeResourceExhausted:
		return Output{Code: CodeFailed}
	}
	if !write {
		return Output{Code: CodeFailed}
	}
	if reason == rpc.ReasonNoLeader || errors.Is(err, syscall.ECONNREFUSED) {
		return Output{Code: CodeFailed}
	}
	return Output{Code: CodeUnknown}
}

// HoldFor makes a hold with an explicit TTL outside the checked history
// (the hold-expiry probe) and returns its server ID.
func (c *ConnectClient) HoldFor(ctx context.Context, in Input, ttl time.Duration) (string, error) {
	resp, err := c.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: toShape(in), HoldTtl: durationpb.New(ttl),
		Labels: map[string]string{labelKey: in.ID}, IdempotencyKey: in.ID}))
	if err != nil {
		return "", fmt.Errorf("probe hold %s: %w", in.ID, err)
	}
	return resp.Msg.GetReservation().GetId(), nil
}

// Known implements Client.
func (c *ConnectClient) Known(id string) bool {
	_, ok := c.ids.get(id)
	return ok
}

// List implements Client: every reservation, paged, read locally (stale).
func (c *ConnectClient) List(ctx context.Context) ([]Reservation, error) {
	var out []Reservation
	token := ""
	for {
		resp, err := c.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{PageSize: 1000, PageToken: token, Stale: true}))
		if err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		for _, r := range resp.Msg.GetReservations() {
			out = append(out, fromProto(r))
		}
		token = resp.Msg.GetNextPageToken()
		if token == "" {
			return out, nil
		}
	}
}

func fromProto(r *ledgerdv1.Reservation) Reservation {
	res := Reservation{
		ID: r.GetLabels()[labelKey], ServerID: r.GetId(), Start: ms(r.GetStart()), End: ms(r.GetEnd()),
		Status: statusOf[r.GetState()], HoldExpiresAt: ms(r.GetHoldExpiresAt()), Version: r.GetVersion(),
	}
	for _, p := range r.GetParts() {
		res.Parts = append(res.Parts, Part{Resource: p.GetResource(), Amount: p.GetAmount()})
	}
	if p := r.GetPending(); p != nil {
		ps := &PendingShape{Start: ms(p.GetStart()), End: ms(p.GetEnd()), HoldExpiresAt: ms(p.GetHoldExpiresAt())}
		for _, q := range p.GetParts() {
			ps.Parts = append(ps.Parts, Part{Resource: q.GetResource(), Amount: q.GetAmount()})
		}
		res.Pending = ps
	}
	return res
}

// Leader implements Client.
func (c *ConnectClient) Leader(ctx context.Context) (string, error) {
	resp, err := c.cl.Leader(ctx, connect.NewRequest(&ledgerdv1.LeaderRequest{}))
	if err != nil {
		return "", fmt.Errorf("leader: %w", err)
	}
	m := resp.Msg
	if m.GetId() == "" && m.GetRaftAddress() == "" {
		return "", nil
	}
	return c.names(m.GetRaftAddress(), m.GetApiAddress(), m.GetId()), nil
}

// Members returns the Raft server IDs with their Raft addresses.
func (c *ConnectClient) Members(ctx context.Context) (map[string]string, error) {
	resp, err := c.cl.Members(ctx, connect.NewRequest(&ledgerdv1.MembersRequest{}))
	if err != nil {
		return nil, fmt.Errorf("members: %w", err)
	}
	out := map[string]string{}
	for _, m := range resp.Msg.GetMembers() {
		out[m.GetId()] = m.GetRaftAddress()
	}
	return out, nil
}

// RemoveServer asks the cluster to drop a server from the Raft configuration.
func (c *ConnectClient) RemoveServer(ctx context.Context, id string) error {
	if _, err := c.cl.RemoveServer(ctx, connect.NewRequest(&ledgerdv1.RemoveServerRequest{Id: id})); err != nil {
		return fmt.Errorf("remove server %s: %w", id, err)
	}
	return nil
}

// EnsureResource implements Client.
func (c *ConnectClient) EnsureResource(ctx context.Context, name string, capacity int64) error {
	_, err := c.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{
		Resource:       &ledgerdv1.Resource{Name: name, Capacity: capacity, Unit: "units", Policy: ledgerdv1.Policy_POLICY_REJECT},
		IdempotencyKey: "jepsen-resource-" + name,
	}))
	if err == nil || connect.CodeOf(err) == connect.CodeAlreadyExists {
		return nil
	}
	return fmt.Errorf("create resource %s: %w", name, err)
}
