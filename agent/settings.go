package agent

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

const usage = `Usage: ledgerd agent [options]

Runs a ledgerd server. Configuration comes from a JSON file (-config), then
LEDGERD_<KEY> environment variables, then flags (-<key>), later ones winning.
The JSON keys are the flag names with underscores, e.g.

  {"node_name": "head-1", "data_dir": "/var/lib/ledgerd",
   "http_addr": "10.0.0.1:7420", "raft_addr": "10.0.0.1:7421",
   "gossip_addr": "10.0.0.1:7422", "bootstrap_expect": 3,
   "retry_join": ["10.0.0.2:7422", "10.0.0.3:7422"], "log_format": "json"}

Options:
`

// Flags are the options of the agent command that are not configuration
// keys.
type Flags struct {
	// Dev runs the one-node playground (Options.Dev).
	Dev bool
	// ConfigFile is the JSON config file read before the environment and
	// the flags.
	ConfigFile string
	// ConfigCheck validates the configuration and exits.
	ConfigCheck bool
}

// ParseArgs turns the agent command's arguments and the environment into a
// validated Config: defaults, then the JSON file (-config), then LEDGERD_*
// variables, then flags, later ones winning. Usage goes to stderr.
func ParseArgs(args []string, getenv func(string) string, stderr io.Writer) (Config, Flags, error) {
	var opts Flags
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.BoolVar(&opts.Dev, "dev", false, "one-node cluster in a temporary data dir with sample resources")
	fs.StringVar(&opts.ConfigFile, "config", "", "JSON config file")
	fs.BoolVar(&opts.ConfigCheck, "config-check", false, "validate the configuration and exit")
	var fv flagValues
	fv.register(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, opts, err
	}
	if fs.NArg() > 0 {
		return Config{}, opts, fmt.Errorf("agent: unexpected argument %q", fs.Arg(0))
	}
	cfg := DefaultConfig()
	if opts.ConfigFile != "" {
		if err := loadConfigFile(opts.ConfigFile, &cfg); err != nil {
			return cfg, opts, err
		}
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, opts, err
	}
	if err := fv.apply(&cfg); err != nil {
		return cfg, opts, err
	}
	if err := cfg.Validate(opts.Dev); err != nil {
		return cfg, opts, err
	}
	if _, err := cfg.raftTLS(); err != nil {
		return cfg, opts, err
	}
	if _, _, err := cfg.HTTPTLS(); err != nil {
		return cfg, opts, err
	}
	return cfg, opts, nil
}

// setting describes one configuration key and how to set it from a string.
type setting struct {
	key  string
	help string
	set  func(c *Config, v string) error
}

// valuelessKeys are the keys whose flags may be given without a value:
// -insecure means -insecure=true. The other boolean keys keep taking a
// value after a space (-tls-http true), as they always have, which a
// valueless flag cannot.
var valuelessKeys = map[string]bool{"insecure": true}

func str(p func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *p(c) = v; return nil }
}

var settings = []setting{
	{"node_name", "human-readable server name (default: host name)", str(func(c *Config) *string { return &c.NodeName })},
	{"data_dir", "directory for the Raft log, snapshots and node-id", str(func(c *Config) *string { return &c.DataDir })},
	{"http_addr", "host:port of the HTTP API (Connect, gRPC, gRPC-Web, /metrics, /healthz)", str(func(c *Config) *string { return &c.HTTPAddr })},
	{"http_advertise", "host:port peers use to reach the HTTP API (default http_addr)", str(func(c *Config) *string { return &c.HTTPAdvertise })},
	{"raft_addr", "host:port the Raft transport binds", str(func(c *Config) *string { return &c.RaftAddr })},
	{"raft_advertise", "host:port peers dial for Raft (default raft_addr)", str(func(c *Config) *string { return &c.RaftAdvertise })},
	{"gossip_addr", "host:port gossip binds (TCP and UDP)", str(func(c *Config) *string { return &c.GossipAddr })},
	{"gossip_advertise", "host:port peers reach gossip at (default gossip_addr)", str(func(c *Config) *string { return &c.GossipAdvertise })},
	{"retry_join", "gossip host:port to join; repeat the flag or separate with commas", func(c *Config, v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.RetryJoin = append(c.RetryJoin, a)
			}
		}
		return nil
	}},
	{"bootstrap_expect", "servers to wait for before bootstrapping a new cluster", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer: %w", err)
		}
		c.BootstrapExpect = n
		return nil
	}},
	{"tls_cert_file", "PEM certificate of this server (Raft TLS)", str(func(c *Config) *string { return &c.TLSCertFile })},
	{"tls_key_file", "PEM private key of this server (Raft TLS)", str(func(c *Config) *string { return &c.TLSKeyFile })},
	{"tls_ca_file", "PEM CA bundle that signs the servers' certificates", str(func(c *Config) *string { return &c.TLSCAFile })},
	{"tls_verify_incoming", "require peers to present a server certificate of the cluster (mutual TLS on Raft and /internal/)", boolSetter(func(c *Config) *bool { return &c.TLSVerifyIncoming })},
	{"tls_http", "serve the HTTP API over TLS (HTTP/2 and HTTP/1.1) with tls_cert_file/tls_key_file; peers reach it over https checked against tls_ca_file", boolSetter(func(c *Config) *bool { return &c.TLSHTTP })},
	{"tls_http_client_ca_file", "PEM CA bundle that signs API clients' certificates (with tls_http; tls_ca_file is always accepted)", str(func(c *Config) *string { return &c.TLSHTTPClientCAFile })},
	{"tls_http_require_client_cert", "every API client must present a certificate (with tls_http); otherwise a bearer token is enough", boolSetter(func(c *Config) *bool { return &c.TLSHTTPRequireClientCert })},
	{"insecure", "run without authenticating peers and callers (test beds only; logged at ERROR, ledgerd_insecure 1)", boolSetter(func(c *Config) *bool { return &c.Insecure })},
	{"secure_migration", "a stage of moving a running insecure cluster to secure by rolling restarts: accept (take TLS and plaintext, send plaintext), then send (take both, send TLS and encrypted gossip); needs insecure and every secure setting", str(func(c *Config) *string { return &c.SecureMigration })},
	{"metrics_token", "bearer token /metrics requires (empty: /metrics is open to anyone who reaches the port)", str(func(c *Config) *string { return &c.MetricsToken })},
	{"gossip_key", "base64 key (16, 24 or 32 bytes) that encrypts gossip; DATA_DIR/keyring.json, once a key rotation wrote it, takes precedence", str(func(c *Config) *string { return &c.GossipKey })},
	{"log_level", "debug, info, warn or error", str(func(c *Config) *string { return &c.LogLevel })},
	{"log_format", "text or json", str(func(c *Config) *string { return &c.LogFormat })},
	{"dead_server_grace", "how long a failed server stays in Raft before removal", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		c.DeadServerGrace = Duration(d)
		return err
	}},
	{"tick_interval", "minimum gap between two ticks, the log entries that expire holds and start and end reservations when they are due (default 100ms, at least 1ms)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		c.TickInterval = Duration(d)
		return err
	}},
	{"series_horizon", "how far ahead an endless standing reservation is booked when it does not say (default 2160h, 90 days)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		c.SeriesHorizon = Duration(d)
		return err
	}},
	{"series_max_horizon", "the longest horizon a standing reservation may ask for (default and cap 8784h, 366 days)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		c.SeriesMaxHorizon = Duration(d)
		return err
	}},
	{"raft_heartbeat_timeout", "a follower that hears nothing from the leader for this long (randomly up to twice as long) campaigns (default 1s)", durSetter(func(c *Config) *Duration { return &c.RaftHeartbeatTimeout })},
	{"raft_election_timeout", "a candidate that has not won within this long (randomly up to twice as long) tries again (default 1s)", durSetter(func(c *Config) *Duration { return &c.RaftElectionTimeout })},
	{"raft_leader_lease_timeout", "a leader that cannot reach a majority for this long steps down (default 500ms, at most raft_heartbeat_timeout)", durSetter(func(c *Config) *Duration { return &c.RaftLeaderLeaseTimeout })},
	{"forward_timeout", "bound on a forwarded write or read-index call to a leader that keeps its leadership but does not answer; a leadership change ends the call at once (default 10s, at least 100ms)", durSetter(func(c *Config) *Duration { return &c.ForwardTimeout })},
	{"ready_max_lag", "committed entries the node may have left to apply while /readyz still says ready (0: 250)", intSetter(func(c *Config) *int { return &c.ReadyMaxLag })},
	{"raft_log_store", "where the Raft log lives: boltdb (raft.db) or wal (DATA_DIR/wal/); empty keeps what the data dir holds, or the default for a new one; a node cannot switch in place", str(func(c *Config) *string { return &c.RaftLogStore })},
	{"snapshot_threshold", "entries logged since the last snapshot that make the next check take one", uintSetter(func(c *Config) *uint64 { return &c.SnapshotThreshold })},
	{"snapshot_interval", "how often to check whether a snapshot is due (randomly up to twice as long)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		c.SnapshotInterval = Duration(d)
		return err
	}},
	{"trailing_logs", "log entries kept behind a snapshot for lagging followers", uintSetter(func(c *Config) *uint64 { return &c.TrailingLogs })},
	{"snapshot_on_shutdown", "take a snapshot on graceful shutdown so the next start replays almost nothing", boolSetter(func(c *Config) *bool { return &c.SnapshotOnShutdown })},
	{"memory_limit", "soft limit on the process's memory, e.g. 900MiB: the Go collector works harder near it (0: none, or GOMEMLIMIT)", byteSizeSetter(func(c *Config) *ByteSize { return &c.MemoryLimit })},
	{"gc_headroom", "how far the heap may grow above its live data between collections before the collector runs more often, down to GOGC 50: holds a large node nearer 1.5x its live data than 2x, for more collector CPU, e.g. 256MiB (default 0: off, GOGC 100 or the environment's)", byteSizeSetter(func(c *Config) *ByteSize { return &c.GCHeadroom })},
	{"gc_min_heap", "the heap size below which the collector waits: while the live heap is under half of it, GOGC is raised (up to 1000) so that the next collection comes when the heap reaches it; a small node trades that memory for less collector CPU, e.g. 256MiB (default 0: off; gc_headroom wins where both apply, the environment's GOGC always)", byteSizeSetter(func(c *Config) *ByteSize { return &c.GCMinHeap })},
	{"snapshot_log_bytes", "also snapshot as soon as this much log was applied since the last snapshot, e.g. 4MiB: bounds the replay after a crash whatever the write rate, at a price in write throughput (default 0: only snapshot_threshold)", byteSizeSetter(func(c *Config) *ByteSize { return &c.SnapshotLogBytes })},
	{"restart_target", "aim for a restart after a crash within this long: the node measures how long its restore and its log replay take and snapshots by log volume when the replay would run past what the restore leaves; under heavy writes that costs some write throughput, most where the restore takes most of the target (default 3s; 0: off)", durSetter(func(c *Config) *Duration { return &c.RestartTarget })},
	{"log_check_window", "log indices per window of the log check, which compares sums of applied entries with the peers' and alerts on a difference (0: 16384); set it alike on every server", uintSetter(func(c *Config) *uint64 { return &c.LogCheckWindow })},
	{"log_check_interval", "how often the log check fetches the peers' sums, 0 or at least 100ms (0: 10s)", durSetter(func(c *Config) *Duration { return &c.LogCheckInterval })},
	{"idempotency_max_keys", "idempotency keys remembered at most, oldest forgotten first (0: 262144); the leader writes it into the log, so set it alike on every server", intSetter(func(c *Config) *int { return &c.IdempotencyMaxKeys })},
	{"ended_retention", "how long ended (completed, cancelled, aborted, expired, denied) reservations stay readable, at least 1m (0: 24h); the leader writes it into the log, so set it alike on every server", durSetter(func(c *Config) *Duration { return &c.EndedRetention })},
	{"ended_max", "ended reservations kept at most, those that ended first dropped first, 0 or at least 100 (0: no limit); the leader writes it into the log, so set it alike on every server", intSetter(func(c *Config) *int { return &c.EndedMax })},
	{"pprof", "serve Go profiles under /debug/pprof/ on the HTTP port (debugging only)", boolSetter(func(c *Config) *bool { return &c.Pprof })},
	{"tokens_file", "API bearer-token file; empty turns API authentication off", str(func(c *Config) *string { return &c.TokensFile })},
	{"cors_origins", "browser origins allowed to call the API; repeat or separate with commas", func(c *Config, v string) error {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.CORSOrigins = append(c.CORSOrigins, o)
			}
		}
		return nil
	}},
	{"rate_limit", "API calls per second per tenant; 0 disables", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("want a number: %w", err)
		}
		c.RateLimit = f
		return nil
	}},
	{"rate_burst", "API rate-limit bucket size (default rate_limit)", intSetter(func(c *Config) *int { return &c.RateBurst })},
	{"max_request_bytes", "largest API request message", intSetter(func(c *Config) *int { return &c.MaxRequestBytes })},
}

func uintSetter(p func(*Config) *uint64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want a non-negative integer: %w", err)
		}
		*p(c) = n
		return nil
	}
}

func boolSetter(p func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false: %w", err)
		}
		*p(c) = b
		return nil
	}
}

// byteSizeSetter parses a ByteSize ("900MiB", "4096") into *p(c).
func byteSizeSetter(p func(*Config) *ByteSize) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseByteSize(v)
		*p(c) = n
		return err
	}
}

func intSetter(p func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer: %w", err)
		}
		*p(c) = n
		return nil
	}
}

// resetList empties a list-valued key so a later source replaces the
// earlier one's list instead of extending it.
func resetList(c *Config, key string) {
	switch key {
	case "retry_join":
		c.RetryJoin = nil
	case "cors_origins":
		c.CORSOrigins = nil
	}
}

func envName(key string) string { return "LEDGERD_" + strings.ToUpper(key) }

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// applyEnv sets every key whose LEDGERD_* variable is set.
func applyEnv(c *Config, getenv func(string) string) error {
	for _, s := range settings {
		if v := getenv(envName(s.key)); v != "" {
			resetList(c, s.key)
			if err := s.set(c, v); err != nil {
				return fmt.Errorf("environment %s: %w", envName(s.key), err)
			}
		}
	}
	return nil
}

// flagValues collects flag settings so they can be applied after the file
// and the environment.
type flagValues struct {
	order []struct {
		s setting
		v string
	}
}

func (fv *flagValues) register(fs *flag.FlagSet) {
	for _, s := range settings {
		define := fs.Func
		if valuelessKeys[s.key] {
			define = fs.BoolFunc
		}
		define(flagName(s.key), s.help+" (env "+envName(s.key)+")", func(v string) error {
			fv.order = append(fv.order, struct {
				s setting
				v string
			}{s, v})
			return nil
		})
	}
}

func (fv *flagValues) apply(c *Config) error {
	reset := map[string]bool{}
	for _, e := range fv.order {
		if !reset[e.s.key] {
			resetList(c, e.s.key)
			reset[e.s.key] = true
		}
		if err := e.s.set(c, e.v); err != nil {
			return fmt.Errorf("flag -%s: %w", flagName(e.s.key), err)
		}
	}
	return nil
}

// durSetter sets a duration key.
func durSetter(field func(*Config) *Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*field(c) = Duration(d)
		return nil
	}
}
