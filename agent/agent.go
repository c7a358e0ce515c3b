package agent

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/tlssniff"
	"github.com/ledgerd/ledgerd/ledger/replicated"
	"github.com/ledgerd/ledgerd/rpc"
)

// The node checks a snapshot from outside with the FSM before raft takes
// it (cluster.RestoreSnapshot); without this the check would pass silently.
var _ cluster.SnapshotVerifier = (*fsm.FSM)(nil)

// streamGrace is how long a graceful shutdown lets requests in flight
// finish before it ends the streams that never would.
const streamGrace = 2 * time.Second

// readHeaderTimeout bounds how long a caller may take to send a request's
// headers (and, while moving to secure, its first byte).
const readHeaderTimeout = 10 * time.Second

// Options are what assembling a node needs beyond its Config: the choices
// of the command line (-dev) and the hooks of test harnesses and
// benchmarks. The zero value is a production agent.
type Options struct {
	// Dev runs the one-node playground of `ledgerd agent -dev`: a
	// temporary data dir (unless Config.DataDir is set), free loopback
	// ports for Raft and gossip, a cluster of one, and sample data on Run.
	Dev bool
	// Logger receives the agent's logs; default: Config's log_level and
	// log_format on stderr.
	Logger *slog.Logger
	// HTTPListener, if set, is served instead of listening on
	// Config.HTTPAddr; the agent closes it.
	HTTPListener net.Listener
	// Now is the clock the leader stamps into commands; default the wall
	// clock, skewed by a clock-offset file in the data dir (chaos tests).
	Now func() time.Time
	// Cluster, if set, adjusts the node's cluster configuration after it
	// has been built from Config (test timings).
	Cluster func(*cluster.Config)
	// API, if set, adjusts the public API's options after they have been
	// built from Config (authentication, clock).
	API func(*rpc.Options)
	// BodyProgress, if set, replaces the 30 s a request body has to deliver
	// each next chunk (tests shorten it).
	BodyProgress time.Duration
	// BridgeDriver, if set, replaces the Slurm driver of the slurm_bridge
	// role (tests).
	BridgeDriver bridge.Driver
}

// Agent is one assembled ledgerd server: the FSM, its cluster node, the
// ledger on top of both, the public API, and the HTTP server that serves
// the API with the cluster's internal endpoints, metrics and health.
//
// Lifecycle: New assembles and starts the node (Raft and gossip run from
// then on); Start serves HTTP; Shutdown stops both. Run does all three for
// the command line. The accessors may be called at any time after New.
type Agent struct {
	cfg  Config
	opts Options
	log  *slog.Logger

	fsm  *fsm.FSM
	node *cluster.Node
	// retention is the leader's tick, which also puts ended_retention,
	// ended_max and idempotency_max_keys into the log.
	retention *replicated.RetentionTicker
	// clock is the leader's stamping clock (Options.Now or the skewable
	// wall clock); standing reservations expand with it.
	clock  func() time.Time
	ledger *replicated.Ledger
	reg    *prometheus.Registry

	httpLn net.Listener
	// certs is this server's certificate, reloaded by Reload; nil
	// without TLS.
	certs *certSource
	// auth is the API's authenticator, reloaded by Reload; nil without a
	// tokens file.
	auth *rpc.Authenticator
	// reloads counts Reload calls by result.
	reloads *prometheus.CounterVec
	// capped is httpLn's connection cap.
	capped *capListener
	http   *http.Server
	// httpTLS serves the API over TLS when set (tls_http).
	httpTLS *tls.Config
	// tempDir is the dev data dir, removed by Close.
	tempDir string
	// addr is the host:port the HTTP listener bound.
	addr string
	// stopRequests ends the context of every request in flight, so that
	// streams (Watch) end when the agent shuts down instead of holding
	// the HTTP server's graceful shutdown until its deadline.
	stopRequests context.CancelFunc
	// stopGC ends the gc_headroom and gc_min_heap policies (keepGCPolicy).
	stopGC context.CancelFunc
	// bridge is the slurm_bridge role; nil without one.
	bridge *bridgeRole
}

// New assembles a node from cfg: it creates the data dir (dev), the FSM,
// the HTTP listener, the cluster node and the ledger, and builds the HTTP
// handler. The node runs from here on; call Start to serve HTTP and
// Shutdown (or Close, after a failed start) to stop. cfg must have been
// validated (Config.Validate), as ParseArgs does.
func New(cfg Config, o Options) (*Agent, error) {
	a := &Agent{cfg: cfg, opts: o, log: o.Logger, httpLn: o.HTTPListener}
	if a.log == nil {
		a.log = cfg.NewLogger(os.Stderr)
	}
	a.applyMemoryLimit()
	gcCtx, stopGC := context.WithCancel(context.Background())
	a.stopGC = stopGC
	a.keepGCPolicy(gcCtx)
	a.warnInsecure()
	for _, step := range []func() error{a.createDataDir, a.createFSM, a.listenHTTP, a.createNode} {
		if err := step(); err != nil {
			a.Close()
			return nil, err
		}
	}
	a.addr = a.httpLn.Addr().String()
	a.ledger = NewLedger(a.node, a.fsm)
	a.ledger.ConfigureSeries(a.cfg.seriesLimits(), a.clock)
	if err := a.createBridge(); err != nil {
		a.Close()
		return nil, err
	}
	base, stop := context.WithCancel(context.Background())
	a.stopRequests = stop
	progress := bodyProgressDefault
	if o.BodyProgress > 0 {
		progress = o.BodyProgress
	}
	a.http = &http.Server{Handler: withBodyProgress(progress, a.handler()), Protocols: rpc.ServeProtocols(), TLSConfig: a.httpTLS,
		ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return base }}
	return a, nil
}

// NewLedger builds the ledger that replicates writes through log and reads
// f: the one place where a ledger is assembled, for agents and for test
// harnesses that replace Raft with a local log.
func NewLedger(log replicated.Log, f *fsm.FSM) *replicated.Ledger {
	return replicated.New(log, f)
}

// Run is the agent's life on the command line: serve, seed the dev sample
// data, wait for ctx, then shut down gracefully. out receives the dev
// agent's greeting.
func (a *Agent) Run(ctx context.Context, out io.Writer) error {
	defer a.Close()
	a.log.Info("agent starting", "pid", os.Getpid())
	a.Start()
	if a.opts.Dev {
		if err := a.seedDev(ctx, out); err != nil {
			a.log.Error("dev sample data", "err", err)
		}
	}
	a.seedLimits(ctx)
	<-ctx.Done()
	a.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.Shutdown(sctx)
}

func (a *Agent) createDataDir() error {
	if a.opts.Dev && a.cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "ledgerd-dev-")
		if err != nil {
			return fmt.Errorf("dev data dir: %w", err)
		}
		a.tempDir, a.cfg.DataDir = dir, dir
	}
	return nil
}

func (a *Agent) createFSM() error {
	f, err := fsm.New(a.cfg.fsmConfig())
	if err != nil {
		return fmt.Errorf("fsm: %w", err)
	}
	a.fsm = f
	return nil
}

func (a *Agent) listenHTTP() error {
	ln := a.httpLn
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.cfg.HTTPAddr); err != nil {
			return fmt.Errorf("http_addr: %w", err)
		}
	}
	a.capped = newCapListener(ln, maxConns(), maxConnsPerIP)
	a.httpLn = a.capped
	return nil
}

// clusterConfig is the node's cluster configuration: the one place where
// Config becomes a cluster.Config.
func (a *Agent) clusterConfig() (cluster.Config, error) {
	certs, err := a.cfg.newCertSource()
	if err != nil {
		return cluster.Config{}, err
	}
	a.certs = certs
	raftTLS, err := a.cfg.raftTLSWith(certs)
	if err != nil {
		return cluster.Config{}, err
	}
	httpTLS, peerTLS, err := a.cfg.httpTLSWith(certs)
	if err != nil {
		return cluster.Config{}, err
	}
	a.httpTLS = httpTLS
	migration := migrationStages[a.cfg.SecureMigration] // validated
	if migration == cluster.MigrationAccept {
		// Peers not yet restarted serve their API in plaintext only.
		peerTLS = nil
	}
	var key []byte
	if a.cfg.GossipKey != "" {
		key, _ = base64.StdEncoding.DecodeString(a.cfg.GossipKey) // validated
	}
	advertise := a.cfg.HTTPAdvertise
	if advertise == "" {
		advertise = a.httpLn.Addr().String()
	}
	raftAddr, gossipAddr := a.cfg.RaftAddr, a.cfg.GossipAddr
	if a.opts.Dev {
		// One node, nobody dials in: free ports avoid clashing with a
		// real agent on the same machine.
		if def := DefaultConfig(); raftAddr != def.RaftAddr || gossipAddr != def.GossipAddr {
			a.log.Warn("-dev ignores raft_addr and gossip_addr: a one-node playground binds free loopback ports for Raft and gossip", "raft_addr", raftAddr, "gossip_addr", gossipAddr)
		}
		raftAddr, gossipAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	now := a.opts.Now
	if now == nil {
		now = newSkewedClock(a.cfg.DataDir, a.log).Now
	}
	a.clock = now
	// The leader's tick also expands standing reservations.
	series := replicated.NewSeriesTicker(a.fsm, a.cfg.seriesLimits(), now, a.log)
	// And it puts the configured retention of ended reservations and the
	// cap on idempotency keys into force, once every server can apply it
	// (createNode gives it the node).
	ticker := replicated.NewRetentionTicker(a.fsm, a.cfg.retention(), series, now, a.log)
	a.retention = ticker
	// The leader expands a new series' first occurrences again when the
	// log time has overtaken some of them.
	stamp := replicated.NewSeriesStamp(a.fsm, a.cfg.seriesLimits(), a.log)
	c := cluster.Config{
		NodeName:        a.cfg.NodeName,
		DataDir:         a.cfg.DataDir,
		RaftBind:        raftAddr,
		RaftAdvertise:   a.cfg.RaftAdvertise,
		GossipBind:      gossipAddr,
		GossipAdvertise: a.cfg.GossipAdvertise,
		RPCAdvertise:    advertise,
		RetryJoin:       a.cfg.RetryJoin,
		BootstrapExpect: a.cfg.BootstrapExpect,
		Dev:             a.opts.Dev,
		RaftTLS:         raftTLS,
		RPCTLS:          peerTLS,
		GossipKey:       key,
		Migration:       migration,
		DeadServerGrace: time.Duration(a.cfg.DeadServerGrace),
		TickInterval:    time.Duration(a.cfg.TickInterval),
		ReadyLag:        a.cfg.ReadyMaxLag,
		ForwardTimeout:  time.Duration(a.cfg.ForwardTimeout),

		HeartbeatTimeout:   time.Duration(a.cfg.RaftHeartbeatTimeout),
		ElectionTimeout:    time.Duration(a.cfg.RaftElectionTimeout),
		LeaderLeaseTimeout: time.Duration(a.cfg.RaftLeaderLeaseTimeout),

		LogStore:           a.cfg.RaftLogStore,
		SnapshotThreshold:  a.cfg.SnapshotThreshold,
		SnapshotInterval:   time.Duration(a.cfg.SnapshotInterval),
		TrailingLogs:       a.cfg.TrailingLogs,
		SnapshotOnShutdown: a.cfg.SnapshotOnShutdown,
		SnapshotLogBytes:   uint64(a.cfg.SnapshotLogBytes),
		RestartTarget:      time.Duration(a.cfg.RestartTarget),
		LogCheckWindow:     a.cfg.LogCheckWindow,
		LogCheckInterval:   time.Duration(a.cfg.LogCheckInterval),
		Stamp:              stamp.Stamp,
		Group:              fsm.GroupCommands,
		GroupVersion:       fsm.GroupVersion,
		Check:              checkForwarded,
		Idempotent:         idempotent,
		Now:                now,
		Tick:               ticker.Tick,
		NextDue:            ticker.NextDue,
		Insecure:           a.cfg.Insecure,
		EnvelopeVersion:    fsm.CurrentVersion,
		Logger:             a.log,
		Registerer:         a.reg,
	}
	if a.opts.Cluster != nil {
		a.opts.Cluster(&c)
	}
	return c, nil
}

func (a *Agent) createNode() error {
	a.reg = prometheus.NewRegistry()
	insecure := 0.0
	if a.cfg.Insecure {
		insecure = 1
	}
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newLedgerCollector(a.fsm),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ledgerd_insecure", Help: "1 when the agent runs with -insecure: some peers or callers are not authenticated."},
			func() float64 { return insecure }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ledgerd_http_connections_refused_total", Help: "HTTP connections closed on accept because the agent's or one address's connection cap was reached."},
			func() float64 { return float64(a.capped.Dropped()) }))
	cfg, err := a.clusterConfig()
	if err != nil {
		return err
	}
	a.reloadMetrics(a.reg)
	node, err := cluster.New(cfg, a.fsm)
	if errors.Is(err, cluster.ErrLogStoreMismatch) {
		return fmt.Errorf("config: raft_log_store: %w", err)
	}
	if err != nil {
		return err
	}
	a.node = node
	a.retention.SetVersioner(node)
	return nil
}

// checkForwarded refuses, before it enters the log, a command a peer
// forwarded that this node's FSM could not apply (undecodable, an unknown
// type or a newer envelope version): applying it would stop every replica.
// It also refuses a group: only the leader builds groups, and only once
// every server can apply them, so a forwarded one would bypass that gate.
// Commands built in this process are well formed by construction.
func checkForwarded(cmd []byte) error {
	c, err := fsm.Decode(cmd)
	if err == nil && c.GetType() == fsmv1.Command_TYPE_GROUP {
		return fmt.Errorf("forwarded command: %w: a group is built by the leader, never forwarded", fsm.ErrMalformed)
	}
	return err
}

// idempotent is cluster.Config.Idempotent: a command that carries an
// idempotency key is answered from the FSM's idempotency record when it is
// applied again, so the cluster may send it to a new leader after the
// leadership moved while its outcome was unknown. Every write the ledger
// builds carries one (ledger/replicated gives a keyless write one).
func idempotent(cmd []byte) bool {
	c, err := fsm.Decode(cmd)
	return err == nil && c.GetIdempotencyKey() != ""
}

// Start serves HTTP on the agent's listener.
func (a *Agent) Start() {
	ln := a.httpLn
	var mixed net.Listener
	if a.httpTLS != nil && a.cfg.SecureMigration != "" {
		// Moving to secure: TLS and plaintext callers on one port. The
		// sniff deadline is the one a request's headers have anyway.
		var err error
		if mixed, err = tlssniff.NewListener(ln, a.httpTLS, readHeaderTimeout); err != nil {
			a.log.Error("http server", "err", err)
			return
		}
	}
	go func() {
		var err error
		switch {
		case mixed != nil:
			err = a.http.Serve(mixed)
		case a.httpTLS != nil:
			err = a.http.ServeTLS(ln, "", "")
		default:
			err = a.http.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server", "err", err)
		}
	}()
	a.log.Info("listening", "http", ln.Addr().String(), "tls", a.httpTLS != nil, "plaintext_too", mixed != nil, "raft", a.node.RaftAddr(), "gossip", a.node.GossipAddr())
	a.startBridge()
}

// Shutdown hands over leadership, leaves the cluster, then stops HTTP.
func (a *Agent) Shutdown(ctx context.Context) error {
	if a.stopGC != nil {
		a.stopGC()
	}
	a.stopBridge()
	var errs []error
	if a.node != nil {
		if err := a.node.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		a.node = nil
	}
	// Unary calls in flight get a moment to finish; streams (Watch) never
	// finish by themselves, so then every request's context ends.
	done := make(chan error, 1)
	go func() { done <- a.http.Shutdown(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(streamGrace):
		a.stopRequests()
		err = <-done
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	a.httpLn = nil
	return errors.Join(errs...)
}

// Close stops the agent abruptly: the HTTP server closes at once (open
// connections break), then the node shuts down, and the dev data dir is
// removed. It releases what is left after a failed New, and is safe after
// Shutdown and more than once.
func (a *Agent) Close() {
	if a.stopGC != nil {
		a.stopGC()
	}
	a.stopBridge()
	if a.stopRequests != nil {
		a.stopRequests()
	}
	if a.http != nil {
		_ = a.http.Close()
	}
	if a.httpLn != nil {
		a.httpLn.Close()
		a.httpLn = nil
	}
	if a.node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = a.node.Shutdown(ctx)
		cancel()
		a.node = nil
	}
	if a.tempDir != "" {
		os.RemoveAll(a.tempDir)
		a.tempDir = ""
	}
}

// Node returns the agent's cluster node.
func (a *Agent) Node() *cluster.Node { return a.node }

// FSM returns the agent's state machine.
func (a *Agent) FSM() *fsm.FSM { return a.fsm }

// Ledger returns the agent's ledger.
func (a *Agent) Ledger() *replicated.Ledger { return a.ledger }

// Addr returns the host:port the HTTP server listens on.
func (a *Agent) Addr() string { return a.addr }

// URL returns the base URL of the agent's HTTP API.
func (a *Agent) URL() string { return a.scheme() + "://" + a.addr }

// scheme is the URL scheme of this agent's HTTP API.
func (a *Agent) scheme() string {
	if a.httpTLS != nil {
		return "https"
	}
	return "http"
}
