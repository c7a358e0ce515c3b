package rpc

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

// Options configures a Server. Ledger is required; zero values elsewhere
// take the documented defaults.
type Options struct {
	// Ledger serves reservations and resources. Required.
	Ledger ledger.Ledger
	// Cluster serves ClusterService; nil makes those calls Unimplemented.
	Cluster ledger.Cluster
	// Auth maps credentials to principals; nil turns authentication off
	// (every caller is operator of tenant "default"; for -dev only).
	Auth *Authenticator
	// MaxRequestBytes caps one request message (default 4 MiB); larger
	// messages get ResourceExhausted.
	MaxRequestBytes int
	// RateLimit is the sustained calls per second allowed per tenant; 0
	// disables rate limiting. RateBurst is the bucket size (default RateLimit).
	RateLimit float64
	RateBurst int
	// CORSOrigins lists browser origins allowed to call the API ("*" for any);
	// empty disables CORS.
	CORSOrigins []string
	// MaxHoldTTL bounds a requested hold_ttl at the edge (default 24h); the
	// ledger applies its own, replicated, default and maximum as well. A
	// Hold or Modify without hold_ttl gets the ledger's default.
	MaxHoldTTL time.Duration
	// WatchProgress is how often an idle Watch stream gets a progress notice
	// (default 10s).
	WatchProgress time.Duration
	// Now is the clock used for defaults such as not_before; default time.Now.
	// The ledger stamps its own clock into every write.
	Now func() time.Time
	// Logger receives request errors; default slog.Default().
	Logger *slog.Logger
	// LeaderHint, if set, returns the API address (host:port) of the
	// current leader, or "". It is sent on every unary response and error
	// in the Ledgerd-Leader header so clients can go straight to the leader.
	LeaderHint func() string
	// MaxBatch caps the operations of one Batch call (default 256);
	// a longer batch is refused with InvalidArgument naming "operations".
	MaxBatch int
	// Ready, if set, decides the gRPC health status: NOT_SERVING while it
	// returns false (no leader yet, still catching up). Nil means always
	// SERVING.
	Ready func() bool
}

// Server is the public API of one ledgerd node.
type Server struct {
	opts Options
	// limiter is the per-tenant rate limit, nil when off; a Batch takes
	// one token per operation.
	limiter *rateLimiter
	// unauth limits failed authentications per remote address.
	unauth *rateLimiter
	// workers runs the operations of Batch calls.
	workers opWorkers
}

// compressMinBytes is the smallest message that is compressed (when the
// peer accepts compression); smaller ones travel as they are.
const compressMinBytes = 1024

// New checks opts and builds a Server.
func New(opts Options) (*Server, error) {
	if opts.Ledger == nil {
		return nil, errors.New("rpc: Options.Ledger is required")
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = 4 << 20
	}
	if opts.MaxRequestBytes < 0 {
		return nil, fmt.Errorf("rpc: Options.MaxRequestBytes: must be >= 0, got %d", opts.MaxRequestBytes)
	}
	if opts.RateLimit < 0 {
		return nil, fmt.Errorf("rpc: Options.RateLimit: must be >= 0, got %g", opts.RateLimit)
	}
	if opts.MaxHoldTTL == 0 {
		opts.MaxHoldTTL = 24 * time.Hour
	}
	if opts.MaxHoldTTL < time.Millisecond {
		return nil, fmt.Errorf("rpc: Options.MaxHoldTTL: must be at least 1ms, got %s", opts.MaxHoldTTL)
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 256
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("rpc: Options.MaxBatch: must be >= 0, got %d", opts.MaxBatch)
	}
	if opts.WatchProgress <= 0 {
		opts.WatchProgress = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts, unauth: newRateLimiter(unauthRate, unauthBurst, opts.Now), workers: newOpWorkers()}
	if opts.RateLimit > 0 {
		s.limiter = newRateLimiter(opts.RateLimit, opts.RateBurst, opts.Now)
	}
	return s, nil
}

func (s *Server) nowMs() int64 { return s.opts.Now().UnixMilli() }

// ServiceNames are the fully-qualified names of the served services.
var ServiceNames = []string{
	ledgerdv1connect.ReservationServiceName,
	ledgerdv1connect.ResourceServiceName,
	ledgerdv1connect.ClusterServiceName,
	ledgerdv1connect.SeriesServiceName,
	ledgerdv1connect.TenantServiceName,
}

// Mount registers the five services, gRPC health (grpc.health.v1) and
// gRPC reflection (v1 and v1alpha) on mux, each behind the HTTP-level
// middleware of Wrap. Health and reflection need no credentials;
// everything else is authenticated from its headers before its body is
// read (withPreAuth), then rate limited and held to the request size
// limit, compressed or not.
func (s *Server) Mount(mux *http.ServeMux) {
	opts := []connect.HandlerOption{
		connect.WithInterceptors(&authInterceptor{auth: s.opts.Auth, limit: s.limiter}, leaderHint(s.opts.LeaderHint)),
		connect.WithReadMaxBytes(s.opts.MaxRequestBytes),
		// gzip that stops inflating at the size limit (see cappedGzip).
		connect.WithCompression("gzip", newCappedGzip(int64(s.opts.MaxRequestBytes)),
			func() connect.Compressor { return gzip.NewWriter(io.Discard) }),
		// Most messages are a few hundred bytes: gzip costs more CPU than
		// it saves there (about a tenth of all CPU in the service profile).
		connect.WithCompressMinBytes(compressMinBytes),
	}
	// JSON requests with a field the schema does not know are refused
	// naming it, not silently dropped (a typo in not_before once booked
	// at "now").
	opts = append(opts, StrictJSON()...)
	reflector := grpcreflect.NewStaticReflector(ServiceNames...)
	authed := func(path string, h http.Handler) (string, http.Handler) { return path, s.withPreAuth(h) }
	if s.opts.Auth == nil {
		authed = func(path string, h http.Handler) (string, http.Handler) { return path, h }
	}
	for _, route := range []func() (string, http.Handler){
		func() (string, http.Handler) {
			return authed(ledgerdv1connect.NewReservationServiceHandler(&reservations{s: s, l: s.opts.Ledger}, opts...))
		},
		func() (string, http.Handler) {
			return authed(ledgerdv1connect.NewResourceServiceHandler(&resources{s: s, l: s.opts.Ledger}, opts...))
		},
		func() (string, http.Handler) {
			return authed(ledgerdv1connect.NewClusterServiceHandler(&clusterSvc{s: s}, opts...))
		},
		func() (string, http.Handler) {
			return authed(ledgerdv1connect.NewSeriesServiceHandler(newSeriesSvc(s), opts...))
		},
		func() (string, http.Handler) {
			return authed(ledgerdv1connect.NewTenantServiceHandler(newTenants(s), opts...))
		},
		func() (string, http.Handler) {
			return grpchealth.NewHandler(readyChecker{ready: s.opts.Ready})
		},
		func() (string, http.Handler) { return grpcreflect.NewHandlerV1(reflector) },
		func() (string, http.Handler) { return grpcreflect.NewHandlerV1Alpha(reflector) },
	} {
		path, h := route()
		mux.Handle(path, s.Wrap(h))
	}
}

// readyChecker answers gRPC health checks for the whole server ("") and
// for each served service from the node's readiness.
type readyChecker struct{ ready func() bool }

// Check implements grpchealth.Checker.
func (c readyChecker) Check(_ context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if req.Service != "" && !slices.Contains(ServiceNames, req.Service) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown service %q", req.Service))
	}
	if c.ready != nil && !c.ready() {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// Wrap adds the HTTP-level middleware every API request needs: CORS for the
// configured origins and the client-certificate identity for mutual TLS.
func (s *Server) Wrap(h http.Handler) http.Handler {
	return withCORS(s.opts.CORSOrigins, withPeerCN(h))
}

// Handler returns a complete handler: a fresh mux with Mount.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.Mount(mux)
	return mux
}

// ServeProtocols is what an http.Server needs to serve Connect, gRPC and
// gRPC-Web on one port: HTTP/1.1, HTTP/2 over TLS and HTTP/2 without TLS (h2c).
func ServeProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return p
}
