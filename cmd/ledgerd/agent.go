package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/ui"
)

func init() {
	register("agent", "Run a ledgerd server (use -dev for a one-node playground)", runAgent)
}

// agentOptions are the agent's command-line options that are not
// configuration keys.
type agentOptions struct {
	dev         bool
	configFile  string
	configCheck bool
}

const agentUsage = `Usage: ledgerd agent [options]

Runs a ledgerd server. Configuration comes from a JSON file (-config), then
LEDGERD_<KEY> environment variables, then flags (-<key>), later ones winning.
The JSON keys are the flag names with underscores, e.g.

  {"node_name": "head-1", "data_dir": "/var/lib/ledgerd",
   "http_addr": "10.0.0.1:7420", "raft_addr": "10.0.0.1:7421",
   "gossip_addr": "10.0.0.1:7422", "bootstrap_expect": 3,
   "retry_join": ["10.0.0.2:7422", "10.0.0.3:7422"], "log_format": "json"}

Options:
`

// parseAgentArgs turns args and the environment into a validated config.
func parseAgentArgs(args []string, getenv func(string) string, stderr io.Writer) (agentConfig, agentOptions, error) {
	var opts agentOptions
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, agentUsage)
		fs.PrintDefaults()
	}
	fs.BoolVar(&opts.dev, "dev", false, "one-node cluster in a temporary data dir with sample resources")
	fs.StringVar(&opts.configFile, "config", "", "JSON config file")
	fs.BoolVar(&opts.configCheck, "config-check", false, "validate the configuration and exit")
	var fv flagValues
	fv.register(fs)
	if err := fs.Parse(args); err != nil {
		return agentConfig{}, opts, err
	}
	if fs.NArg() > 0 {
		return agentConfig{}, opts, fmt.Errorf("agent: unexpected argument %q", fs.Arg(0))
	}
	cfg := defaultAgentConfig()
	if opts.configFile != "" {
		if err := loadConfigFile(opts.configFile, &cfg); err != nil {
			return cfg, opts, err
		}
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, opts, err
	}
	if err := fv.apply(&cfg); err != nil {
		return cfg, opts, err
	}
	if err := cfg.validate(opts.dev); err != nil {
		return cfg, opts, err
	}
	if _, err := cfg.raftTLS(); err != nil {
		return cfg, opts, err
	}
	if _, _, err := cfg.httpTLS(); err != nil {
		return cfg, opts, err
	}
	return cfg, opts, nil
}

func runAgent(args []string) int {
	cfg, opts, err := parseAgentArgs(args, os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerd agent:", err)
		return 2
	}
	if opts.configCheck {
		fmt.Println("configuration OK")
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runServer(ctx, cfg, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ledgerd agent:", err)
		return 1
	}
	return 0
}

// server is a running agent.
type server struct {
	cfg    agentConfig
	dev    bool
	log    *slog.Logger
	fsm    *fsm.FSM
	node   *cluster.Node
	reg    *prometheus.Registry
	httpLn net.Listener
	http   *http.Server
	// httpTLS serves the API over TLS when set (tls_http).
	httpTLS *tls.Config
	tempDir string
	// listening is closed once the HTTP server runs.
	listening chan struct{}
}

// runServer runs the agent until ctx ends, then shuts down gracefully.
func runServer(ctx context.Context, cfg agentConfig, opts agentOptions, out io.Writer) error {
	return newServer(cfg, opts, cfg.newLogger(os.Stderr)).run(ctx, out)
}

func newServer(cfg agentConfig, opts agentOptions, log *slog.Logger) *server {
	return &server{cfg: cfg, dev: opts.dev, log: log, listening: make(chan struct{})}
}

// run is the agent's life: a sequence of small steps, then wait for ctx.
func (s *server) run(ctx context.Context, out io.Writer) error {
	defer s.cleanup()
	s.log.Info("agent starting", "pid", os.Getpid())
	s.applyMemoryLimit()
	if err := s.createDataDir(); err != nil {
		return err
	}
	if err := s.createFSM(); err != nil {
		return err
	}
	if err := s.listenHTTP(); err != nil {
		return err
	}
	if err := s.createNode(); err != nil {
		return err
	}
	s.startHTTP()
	close(s.listening)
	if s.dev {
		if err := s.seedDev(ctx, out); err != nil {
			s.log.Error("dev sample data", "err", err)
		}
	}
	<-ctx.Done()
	s.log.Info("shutting down")
	return s.shutdown()
}

func (s *server) createDataDir() error {
	if s.dev && s.cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "ledgerd-dev-")
		if err != nil {
			return fmt.Errorf("dev data dir: %w", err)
		}
		s.tempDir, s.cfg.DataDir = dir, dir
	}
	return nil
}

func (s *server) createFSM() error {
	f, err := fsm.New(s.cfg.fsmConfig())
	if err != nil {
		return fmt.Errorf("fsm: %w", err)
	}
	s.fsm = f
	return nil
}

func (s *server) listenHTTP() error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http_addr: %w", err)
	}
	s.httpLn = ln
	return nil
}

func (s *server) createNode() error {
	tlsConf, err := s.cfg.raftTLS()
	if err != nil {
		return err
	}
	httpTLS, peerTLS, err := s.cfg.httpTLS()
	if err != nil {
		return err
	}
	s.httpTLS = httpTLS
	var key []byte
	if s.cfg.GossipKey != "" {
		key, _ = base64.StdEncoding.DecodeString(s.cfg.GossipKey) // validated
	} else if !s.dev {
		s.log.Warn("no gossip_key: gossip is unencrypted and the /internal/ endpoints accept anyone who reaches the HTTP port; set gossip_key outside trusted networks")
	}
	advertise := s.cfg.HTTPAdvertise
	if advertise == "" {
		advertise = s.httpLn.Addr().String()
	}
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newLedgerCollector(s.fsm))
	raftAddr, gossipAddr := s.cfg.RaftAddr, s.cfg.GossipAddr
	if s.dev {
		// One node, nobody dials in: free ports avoid clashing with a
		// real agent on the same machine.
		raftAddr, gossipAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	node, err := cluster.New(cluster.Config{
		NodeName:        s.cfg.NodeName,
		DataDir:         s.cfg.DataDir,
		RaftBind:        raftAddr,
		RaftAdvertise:   s.cfg.RaftAdvertise,
		GossipBind:      gossipAddr,
		GossipAdvertise: s.cfg.GossipAdvertise,
		RPCAdvertise:    advertise,
		RetryJoin:       s.cfg.RetryJoin,
		BootstrapExpect: s.cfg.BootstrapExpect,
		Dev:             s.dev,
		RaftTLS:         tlsConf,
		RPCTLS:          peerTLS,
		GossipKey:       key,
		DeadServerGrace: time.Duration(s.cfg.DeadServerGrace),
		TickInterval:    time.Duration(s.cfg.TickInterval),

		SnapshotThreshold:  s.cfg.SnapshotThreshold,
		SnapshotInterval:   time.Duration(s.cfg.SnapshotInterval),
		TrailingLogs:       s.cfg.TrailingLogs,
		SnapshotOnShutdown: s.cfg.SnapshotOnShutdown,
		Stamp:              fsm.Stamp,
		Now:                newSkewedClock(s.cfg.DataDir, s.log).Now,
		Tick:               fsm.TickCommand,
		Logger:             s.log,
		Registerer:         s.reg,
	}, s.fsm)
	if err != nil {
		return err
	}
	s.node = node
	return nil
}

// handler builds the agent's one HTTP mux.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/internal/", s.node.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	if s.cfg.Pprof {
		mountPprof(mux)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.node.Ready() {
			http.Error(w, "not ready: no leader yet or still catching up", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mountAPI(mux, apiDeps{
		Node: s.node, FSM: s.fsm, Logger: s.log, Dev: s.dev,
		TokensFile: s.cfg.TokensFile, CORSOrigins: s.cfg.CORSOrigins,
		RateLimit: s.cfg.RateLimit, RateBurst: s.cfg.RateBurst, MaxRequestBytes: s.cfg.MaxRequestBytes,
	})
	mux.Handle(ui.Path, ui.Handler())
	mux.Handle("GET /{$}", ui.RedirectRoot())
	return mux
}

func (s *server) startHTTP() {
	var p http.Protocols
	p.SetHTTP1(true)
	if s.httpTLS != nil {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	s.http = &http.Server{Handler: s.handler(), Protocols: &p, ReadHeaderTimeout: 10 * time.Second, TLSConfig: s.httpTLS}
	go func() {
		var err error
		if s.httpTLS != nil {
			err = s.http.ServeTLS(s.httpLn, "", "")
		} else {
			err = s.http.Serve(s.httpLn)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server", "err", err)
		}
	}()
	s.log.Info("listening", "http", s.httpLn.Addr().String(), "tls", s.httpTLS != nil, "raft", s.node.RaftAddr(), "gossip", s.node.GossipAddr())
}

// shutdown hands over leadership, leaves the cluster, then stops HTTP.
func (s *server) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if err := s.node.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	s.node = nil
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	return errors.Join(errs...)
}

func (s *server) cleanup() {
	if s.node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.node.Shutdown(ctx)
		cancel()
	}
	if s.httpLn != nil && s.http == nil {
		s.httpLn.Close()
	}
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir)
	}
}

// seedDev waits for the one-node cluster, creates sample resources and a
// sample reservation through the log, and tells the user how to try it.
func (s *server) seedDev(ctx context.Context, out io.Writer) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for !s.node.Ready() {
		select {
		case <-wctx.Done():
			return fmt.Errorf("no leader: %w", wctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, r := range []struct {
		name string
		capa int64
		unit string
	}{{"cpu", 128, "cores"}, {"gpu", 8, "GPUs"}, {"licenses", 50, "seats"}} {
		if _, err := s.applyDev(wctx, &fsmv1.Command{
			Type: fsmv1.Command_TYPE_CREATE_RESOURCE, IdempotencyKey: "dev-resource-" + r.name, Owner: "default",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: r.name, Capacity: r.capa, Unit: r.unit}},
		}); err != nil {
			return err
		}
	}
	start := time.Now().Add(time.Hour).Truncate(time.Minute)
	res, err := s.applyDev(wctx, &fsmv1.Command{
		Type: fsmv1.Command_TYPE_RESERVE, IdempotencyKey: "dev-sample", Owner: "default",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id:              "sample",
			Parts:           []*fsmv1.Part{{Resource: "cpu", Amount: 64}, {Resource: "gpu", Amount: 2}},
			DurationMillis:  2 * time.Hour.Milliseconds(),
			NotBeforeMillis: start.UnixMilli(),
			Labels:          map[string]string{"example": "true"},
		}},
	})
	if err != nil {
		return err
	}
	r := res.GetReservation()
	addr := s.httpLn.Addr().String()
	fmt.Fprintf(out, `
ledgerd dev agent is ready (data in a temporary directory, removed on exit).

  Web UI: %[6]s://%[1]s%[7]s
  HTTP API (Connect, gRPC, gRPC-Web, JSON): %[6]s://%[1]s
  Metrics: %[6]s://%[1]s/metrics   Health: /healthz /readyz

Sample resources: cpu (128 cores), gpu (8 GPUs), licenses (50 seats).
Sample reservation %[2]q: cpu=64,gpu=2 from %[3]s to %[4]s (%[5]s).

Try:
  ledgerd resources -addr %[1]s
  ledgerd get -addr %[1]s sample
  ledgerd reserve -addr %[1]s -res cpu=16,licenses=4 -dur 1h -after +30m

Press Ctrl-C to stop.
`, addr, r.GetId(), time.UnixMilli(r.GetStartMillis()).UTC().Format(time.RFC3339),
		time.UnixMilli(r.GetEndMillis()).UTC().Format(time.RFC3339), r.GetState(), s.scheme(), ui.Path)
	return nil
}

// scheme is the URL scheme of this agent's HTTP API.
func (s *server) scheme() string {
	if s.httpTLS != nil {
		return "https"
	}
	return "http"
}

func (s *server) applyDev(ctx context.Context, cmd *fsmv1.Command) (*fsmv1.Result, error) {
	b, err := fsm.Encode(cmd)
	if err != nil {
		return nil, err
	}
	out, err := s.node.Apply(ctx, b)
	if err != nil {
		return nil, err
	}
	res, err := fsm.DecodeResult(out)
	if err != nil {
		return nil, err
	}
	if res.GetStatus() != fsmv1.Result_STATUS_OK {
		return nil, fmt.Errorf("%s: %s: %s", cmd.GetType(), res.GetStatus(), res.GetMessage())
	}
	return res, nil
}
