package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

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
	// AttemptTimeout bounds one attempt of a call on one node: past it
	// without an answer the node is taken to have stalled, and the call is
	// sent (with the same idempotency key) to the next node. Default 5s:
	// above what a healthy node takes in the worst case the cluster
	// expects, a follower re-routing a write to a newly elected leader
	// (about one election, 1-3 s with the default Raft timeouts), and far
	// below a stalled node's silence. Negative: no bound but ctx. Calls
	// that stream (snapshots, Watch) are not bounded by it.
	AttemptTimeout time.Duration
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
	// (default 2). A call that finds none in flight goes out at once;
	// otherwise it queues, and a further batch starts beside those in
	// flight only once a fair share of the node's recent callers (their
	// number divided by MaxInFlight) waits for it, so that batches stay
	// large: every batch costs a raft round and an API round trip. Two
	// batches overlap one's API round trip with the other's raft round;
	// 1 sends one batch at a time.
	MaxInFlight int
	// HTTP is the HTTP version the client speaks (default HTTPAuto).
	HTTP HTTPVersion
}

// HTTPVersion chooses the HTTP version a Client speaks to the nodes.
type HTTPVersion int

const (
	// HTTPAuto sends the coalescing client's Batch calls over HTTP/1.1
	// when the protocol allows it (Connect, gRPC-Web) and every other
	// call over HTTP/2. An HTTP/1.1 server answers a request on the
	// connection's own goroutine, where HTTP/2 passes it between the
	// connection's reader, its serve loop and a handler goroutine and
	// back, each hand-off a possible wake-up of an idle thread: at one
	// caller that was 15 % of a write's latency, and at 16 callers
	// HTTP/1.1 carried about a fifth more operations. A node has at most
	// MaxInFlight Batch calls in flight, so a few kept-alive connections
	// carry them; the other calls (unary ones, lists, streams, and
	// everything of a NoCoalesce client) would need one connection per
	// concurrent call, so they multiplex over HTTP/2.
	HTTPAuto HTTPVersion = iota
	// HTTP1 speaks HTTP/1.1 only (over TLS, or in clear text instead of
	// h2c), with up to 64 idle connections per node. Not with the gRPC
	// protocol, which needs HTTP/2.
	HTTP1
	// HTTP2 speaks HTTP/2 (over TLS with ALPN, or h2c in clear text).
	HTTP2
)

// String returns the version's name as the -http flags spell it.
func (v HTTPVersion) String() string {
	switch v {
	case HTTPAuto:
		return "auto"
	case HTTP1:
		return "1.1"
	case HTTP2:
		return "2"
	}
	return fmt.Sprintf("HTTPVersion(%d)", int(v))
}

// ParseHTTPVersion parses "auto", "1.1" or "2".
func ParseHTTPVersion(s string) (HTTPVersion, error) {
	switch s {
	case "auto", "":
		return HTTPAuto, nil
	case "1.1", "1":
		return HTTP1, nil
	case "2":
		return HTTP2, nil
	}
	return 0, fmt.Errorf("http version %q: want auto, 1.1 or 2", s)
}

// versions returns the versions a client with opts speaks for its Batch
// calls and for every other call.
func (v HTTPVersion) versions(opts Options) (batch, other HTTPVersion) {
	switch {
	case v != HTTPAuto:
		return v, v
	case opts.Protocol == ProtocolGRPC:
		return HTTP2, HTTP2
	}
	return HTTP1, HTTP2
}

// endpoint is one node's generated clients.
type endpoint struct {
	addr         string
	reservations ledgerdv1connect.ReservationServiceClient
	resources    ledgerdv1connect.ResourceServiceClient
	cluster      ledgerdv1connect.ClusterServiceClient
	series       ledgerdv1connect.SeriesServiceClient
	tenants      ledgerdv1connect.TenantServiceClient
	// batch coalesces calls to this node; nil when coalescing is off.
	batch *batcher
}

// Client is a ledgerd client over a list of nodes of one cluster. It is safe
// for concurrent use.
type Client struct {
	opts Options
	eps  []*endpoint
	next atomic.Uint64
	hc   *http.Client
	// batchHC carries the Batch calls of the coalescing client (HTTPAuto:
	// HTTP/1.1 while hc speaks HTTP/2).
	batchHC *http.Client
	copts   []connect.ClientOption
	// leader is the node the last response named as leader: writes go
	// there directly instead of through a follower's forwarding hop.
	leader atomic.Pointer[leaderRef]
	// watches are the attempts on the learned leader, cut when it
	// moves to another node (routing.go: attempt, leaderMoved).
	movedMu sync.Mutex
	watches map[*moveWatch]struct{}
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
	if opts.AttemptTimeout == 0 {
		opts.AttemptTimeout = 5 * time.Second
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
		opts.MaxInFlight = 2
	}
	switch opts.HTTP {
	case HTTPAuto, HTTP2:
	case HTTP1:
		if opts.Protocol == ProtocolGRPC {
			return nil, errors.New("client: Options.HTTP = HTTP1: the gRPC protocol needs HTTP/2")
		}
	default:
		return nil, fmt.Errorf("client: Options.HTTP = %d: want HTTPAuto, HTTP1 or HTTP2", int(opts.HTTP))
	}
	hc, bhc := opts.HTTPClient, opts.HTTPClient
	if hc == nil {
		batch, other := opts.HTTP.versions(opts)
		hc = httpClient(opts.TLS, other == HTTP1)
		bhc = hc
		if batch != other && !opts.NoCoalesce {
			bhc = httpClient(opts.TLS, batch == HTTP1)
		}
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
	c := &Client{opts: opts, hc: hc, batchHC: bhc}
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
		series:       ledgerdv1connect.NewSeriesServiceClient(c.hc, a, c.copts...),
		resources:    ledgerdv1connect.NewResourceServiceClient(c.hc, a, c.copts...),
		cluster:      ledgerdv1connect.NewClusterServiceClient(c.hc, a, c.copts...),
		tenants:      ledgerdv1connect.NewTenantServiceClient(c.hc, a, c.copts...),
	}
	if !c.opts.NoCoalesce {
		// Batch answers run to kilobytes, past the servers' compression
		// threshold, and gzip costs both ends more CPU than it saves on a
		// datacenter network (4-6 % of the CPU of a loaded run), so
		// batches ask for uncompressed answers.
		plain := append(slices.Clone(c.copts), connect.WithAcceptCompression("gzip", nil, nil))
		ep.batch = &batcher{rpc: ledgerdv1connect.NewReservationServiceClient(c.batchHC, a, plain...), maxBatch: c.opts.MaxBatch, maxInFlight: c.opts.MaxInFlight}
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
// With http1 it speaks HTTP/1.1 only, keeping up to 64 idle connections
// per node. The transport gets its own copy of cfg: it adds
// "h2" to the copy's ALPN list, which would otherwise leak into the
// caller's other transports.
func httpClient(cfg *tls.Config, http1 bool) *http.Client {
	if cfg != nil {
		cfg = cfg.Clone()
	}
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 5 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	p := new(http.Protocols)
	if http1 {
		p.SetHTTP1(true)
		t.ForceAttemptHTTP2 = false
		t.MaxIdleConnsPerHost = 64
	} else if cfg != nil {
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
