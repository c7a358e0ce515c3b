package agent

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/rpc"
)

// Config is the agent's configuration. A config file is JSON with
// exactly these keys (unknown keys are rejected); every key can also be set
// by the environment variable LEDGERD_<KEY> (upper case) and by the flag
// -<key> with dashes for underscores. Flags beat the environment, which
// beats the file, which beats the defaults.
type Config struct {
	NodeName        string   `json:"node_name"`
	DataDir         string   `json:"data_dir"`
	HTTPAddr        string   `json:"http_addr"`
	HTTPAdvertise   string   `json:"http_advertise"`
	RaftAddr        string   `json:"raft_addr"`
	RaftAdvertise   string   `json:"raft_advertise"`
	GossipAddr      string   `json:"gossip_addr"`
	GossipAdvertise string   `json:"gossip_advertise"`
	RetryJoin       []string `json:"retry_join"`
	BootstrapExpect int      `json:"bootstrap_expect"`
	// TLS for the Raft transport: certificate and key of this server, and
	// the CA that signs every server's certificate. With verify_incoming
	// the peers must present certificates too (mutual TLS).
	TLSCertFile       string `json:"tls_cert_file"`
	TLSKeyFile        string `json:"tls_key_file"`
	TLSCAFile         string `json:"tls_ca_file"`
	TLSVerifyIncoming bool   `json:"tls_verify_incoming"`
	// TLSHTTP serves the HTTP API (and the internal endpoints peers call
	// on it) over TLS with the same certificate and key; peers are
	// verified against tls_ca_file. A client certificate, when presented,
	// must be signed by tls_ca_file or tls_http_client_ca_file.
	TLSHTTP             bool   `json:"tls_http"`
	TLSHTTPClientCAFile string `json:"tls_http_client_ca_file"`
	// TLSHTTPRequireClientCert makes every API client present a
	// certificate (otherwise a token is enough; /internal/ always requires
	// a server's certificate).
	TLSHTTPRequireClientCert bool `json:"tls_http_require_client_cert"`
	// Insecure lets a non-dev agent run with listeners that do not
	// authenticate their peers. It is logged at ERROR on every start and
	// exported as ledgerd_insecure 1. Never use it outside a test bed.
	Insecure bool `json:"insecure"`
	// SecureMigration is a stage of moving a running insecure cluster to
	// secure by rolling restarts (docs/operations.md, "Moving an insecure
	// cluster to secure"): "accept" (stage 1) takes TLS and plaintext
	// peers on the Raft and HTTP ports and encrypted and plain gossip,
	// but dials and gossips in plaintext; "send" (stage 2) also accepts
	// both but dials TLS and encrypts gossip. Stage 3 removes it and
	// insecure. It needs insecure and every setting of a secure agent.
	SecureMigration string `json:"secure_migration"`
	// MetricsToken, if set, is the bearer token /metrics requires.
	MetricsToken string `json:"metrics_token"`
	// GossipKey is base64 of 16, 24 or 32 bytes; it encrypts gossip. Once
	// `ledgerd operator gossip keyring` has changed the keys, the keyring
	// in DATA_DIR/keyring.json is used instead (docs/operations.md).
	GossipKey       string   `json:"gossip_key"`
	LogLevel        string   `json:"log_level"`
	LogFormat       string   `json:"log_format"`
	DeadServerGrace Duration `json:"dead_server_grace"`
	TickInterval    Duration `json:"tick_interval"`
	// SeriesHorizon is how far ahead an endless standing reservation
	// (no COUNT or UNTIL) is booked when it does not say (0: 90 days);
	// SeriesMaxHorizon is the most one may ask for (0: 366 days, also
	// the cap of both).
	SeriesHorizon    Duration `json:"series_horizon"`
	SeriesMaxHorizon Duration `json:"series_max_horizon"`
	// Raft timing and the forward deadline (docs/operations.md, "A leader
	// that stalls or dies"): 0 takes the defaults, heartbeat 1s, election
	// 1s, leader lease 500ms, forward 10s. A stalled or dead leader costs
	// about one election: 1-2 heartbeat timeouts plus a vote.
	RaftHeartbeatTimeout   Duration `json:"raft_heartbeat_timeout"`
	RaftElectionTimeout    Duration `json:"raft_election_timeout"`
	RaftLeaderLeaseTimeout Duration `json:"raft_leader_lease_timeout"`
	ForwardTimeout         Duration `json:"forward_timeout"`
	// ReadyMaxLag is how many committed entries the node may have left to
	// apply while /readyz still answers ready (0: cluster.Config's
	// default, 250); see cluster.Config.ReadyLag.
	ReadyMaxLag int `json:"ready_max_lag"`
	// Snapshots: see cluster.Config. The defaults keep the log replayed
	// after a crash to about SnapshotThreshold plus two SnapshotIntervals
	// of writes; a graceful stop snapshots so the next start replays
	// almost nothing.
	SnapshotThreshold uint64 `json:"snapshot_threshold"`
	// RaftLogStore is where the Raft log lives: "boltdb" (raft.db) or
	// "wal" (DATA_DIR/wal/, hashicorp/raft-wal); empty keeps what the data
	// dir holds, or cluster.DefaultLogStore for a new one. A node cannot
	// switch in place (cluster.Config.LogStore).
	RaftLogStore       string   `json:"raft_log_store"`
	SnapshotInterval   Duration `json:"snapshot_interval"`
	TrailingLogs       uint64   `json:"trailing_logs"`
	SnapshotOnShutdown bool     `json:"snapshot_on_shutdown"`
	// SnapshotLogBytes also snapshots once this many command bytes were
	// applied since the last snapshot (cluster.Config.SnapshotLogBytes).
	// Off by default: it bounds the replay after a crash at a price in
	// write throughput (docs/operations.md, "Automatic snapshots and
	// restart time").
	SnapshotLogBytes ByteSize `json:"snapshot_log_bytes"`
	// RestartTarget keeps the restart after a crash near this long by
	// snapshotting by log volume as the node's own measured restore and
	// replay costs require (cluster.Config.RestartTarget; 0: off).
	RestartTarget Duration `json:"restart_target"`
	// LogCheckWindow and LogCheckInterval tune the log check, which
	// compares window sums of applied entries with the peers'
	// (cluster.Config.LogCheckWindow, LogCheckInterval; 0: 16384 entries,
	// 10s). Set the window alike on every server: peers with another
	// size are not compared.
	LogCheckWindow   uint64   `json:"log_check_window"`
	LogCheckInterval Duration `json:"log_check_interval"`
	// MemoryLimit is the Go runtime's soft memory limit in bytes (0: the
	// runtime's own, from GOMEMLIMIT or none); see applyMemoryLimit.
	MemoryLimit ByteSize `json:"memory_limit"`
	// GCHeadroom caps how far the heap may grow above its live data
	// between collections before GOGC is lowered, down to 50 (0, the
	// default: off, GOGC 100 or the environment's); see keepGCPolicy.
	GCHeadroom ByteSize `json:"gc_headroom"`
	// GCMinHeap is the heap size below which the collector waits: while
	// the live heap is under half of it, GOGC is raised so that the next
	// collection comes when the heap reaches it (0, the default: off);
	// see keepGCPolicy.
	GCMinHeap ByteSize `json:"gc_min_heap"`
	// IdempotencyMaxKeys caps the idempotency keys the ledger remembers
	// (0: fsm.DefaultIdempotencyMaxKeys); see fsmConfig. The leader writes
	// it into the log with the retention (replicated.RetentionTicker), and
	// until that entry every server uses its own: set it alike everywhere.
	IdempotencyMaxKeys int `json:"idempotency_max_keys"`
	// EndedRetention is how long ended reservations stay readable (0:
	// 24h) and EndedMax how many are kept at most (0: no limit). The
	// leader writes them into the log (replicated.RetentionTicker), so
	// replicas always agree; set them alike on every server, or each
	// leader puts its own into force.
	EndedRetention Duration `json:"ended_retention"`
	EndedMax       int      `json:"ended_max"`
	// Pprof serves net/http/pprof under /debug/pprof/ on the HTTP port.
	Pprof bool `json:"pprof"`
	// Public API settings (see rpc.Options).
	TokensFile      string   `json:"tokens_file"`
	CORSOrigins     []string `json:"cors_origins"`
	RateLimit       float64  `json:"rate_limit"`
	RateBurst       int      `json:"rate_burst"`
	MaxRequestBytes int      `json:"max_request_bytes"`

	// TenantLimits seeds the replicated limit table of a new cluster
	// through the logged SetLimits command (config file only; see
	// limits.go).
	TenantLimits []TenantLimitConfig `json:"tenant_limits"`
	// SlurmBridge, if set, runs the Slurm bridge role (agent/bridge.go).
	SlurmBridge *SlurmBridgeConfig `json:"slurm_bridge"`
}

// minLogCheckInterval is the shortest log_check_interval other than 0.
const minLogCheckInterval = 100 * time.Millisecond

// Floors of two timing keys other than 0 (the default). Below them a
// setting is a mistake, not a tuning: a tick_interval of a nanosecond
// writes a tick to the log for every due time apart, and a forward_timeout
// shorter than a commit fails every write and read sent through a
// follower.
const (
	minTickInterval   = time.Millisecond
	minForwardTimeout = 100 * time.Millisecond
)

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// UnmarshalJSON reads a Go duration string; null leaves the value as it
// was, as it does for keys of the plain types. Its errors are
// json.UnmarshalTypeErrors, which the JSON decoder completes with the
// key's name (see ByteSize.UnmarshalJSON).
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[Duration]()}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[Duration]()}
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string UnmarshalJSON reads back.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// DefaultConfig returns the settings of an agent before its config file,
// environment and flags.
func DefaultConfig() Config {
	return Config{
		HTTPAddr:   "127.0.0.1:7420",
		RaftAddr:   "127.0.0.1:7421",
		GossipAddr: "127.0.0.1:7422",
		LogLevel:   "info",
		LogFormat:  "text",

		SnapshotThreshold:  DefaultSnapshotThreshold,
		SnapshotInterval:   Duration(DefaultSnapshotInterval),
		TrailingLogs:       DefaultTrailingLogs,
		SnapshotOnShutdown: true,
		RestartTarget:      Duration(DefaultRestartTarget),
	}
}

// Snapshot defaults of the agent. Raft's own (8192 entries checked every
// 120 s) let a busy node log minutes of writes between snapshots, all of
// which a restart after a crash replays; checking every 10 s bounds the
// replay to about 16k entries plus 20 s of writes, and the threshold keeps
// a quiet node from rewriting its snapshot for a handful of entries.
const (
	DefaultSnapshotThreshold uint64 = 16384
	DefaultSnapshotInterval         = 10 * time.Second
	DefaultTrailingLogs      uint64 = 10240
)

// DefaultRestartTarget is the restart time after a crash the agent aims
// for (restart_target): a node whose restore takes a fraction of it
// snapshots for it only under heavy writes (every 15-20 s at 10k live
// under 64 writing clients), one with a million reservations every second
// or two, so that it replays at most what the restore leaves.
const DefaultRestartTarget = 3 * time.Second

// Validate checks the configuration and names the offending key.
func (c *Config) Validate(dev bool) error {
	if c.DataDir == "" && !dev {
		return errors.New("config: data_dir is required (or run with -dev)")
	}
	if err := c.checkTenantLimits(); err != nil {
		return err
	}
	for _, a := range []struct{ key, v string }{
		{"http_addr", c.HTTPAddr}, {"raft_addr", c.RaftAddr}, {"gossip_addr", c.GossipAddr},
		{"http_advertise", c.HTTPAdvertise}, {"raft_advertise", c.RaftAdvertise}, {"gossip_advertise", c.GossipAdvertise},
	} {
		if a.v == "" && strings.HasSuffix(a.key, "_advertise") {
			continue
		}
		if err := checkHostPort(a.v); err != nil {
			return fmt.Errorf("config: %s: %w", a.key, err)
		}
	}
	if c.HTTPAdvertise == "" && !dev {
		if host, _, _ := net.SplitHostPort(c.HTTPAddr); host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			return fmt.Errorf("config: http_advertise: required when http_addr (%s) binds every interface; peers forward writes to it", c.HTTPAddr)
		}
	}
	for i, j := range c.RetryJoin {
		if err := checkHostPort(j); err != nil {
			return fmt.Errorf("config: retry_join[%d]: %w", i, err)
		}
	}
	if c.BootstrapExpect < 0 {
		return fmt.Errorf("config: bootstrap_expect: must be >= 0, got %d", c.BootstrapExpect)
	}
	if dev && c.BootstrapExpect > 1 {
		return fmt.Errorf("config: bootstrap_expect: must be 0 or 1 with -dev, got %d", c.BootstrapExpect)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("config: tls_cert_file and tls_key_file must be set together")
	}
	if c.TLSCertFile != "" && c.TLSCAFile == "" {
		return errors.New("config: tls_ca_file: required with tls_cert_file (peers' certificates are checked against it)")
	}
	if c.TLSVerifyIncoming && c.TLSCertFile == "" {
		return errors.New("config: tls_verify_incoming: needs tls_cert_file, tls_key_file and tls_ca_file")
	}
	if c.TLSHTTP && c.TLSCertFile == "" {
		return errors.New("config: tls_http: needs tls_cert_file, tls_key_file and tls_ca_file")
	}
	if c.TLSHTTPClientCAFile != "" && !c.TLSHTTP {
		return errors.New("config: tls_http_client_ca_file: only used with tls_http")
	}
	if c.TLSHTTPRequireClientCert && !c.TLSHTTP {
		return errors.New("config: tls_http_require_client_cert: only used with tls_http")
	}
	for _, f := range []struct{ key, path string }{
		{"tls_cert_file", c.TLSCertFile}, {"tls_key_file", c.TLSKeyFile}, {"tls_ca_file", c.TLSCAFile},
		{"tls_http_client_ca_file", c.TLSHTTPClientCAFile},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("config: %s: %w", f.key, err)
		}
	}
	if _, ok := migrationStages[c.SecureMigration]; !ok {
		return fmt.Errorf("config: secure_migration: want accept or send (or empty), got %q", c.SecureMigration)
	}
	if c.GossipKey != "" {
		k, err := base64.StdEncoding.DecodeString(c.GossipKey)
		if err != nil {
			return fmt.Errorf("config: gossip_key: not base64: %w", err)
		}
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return fmt.Errorf("config: gossip_key: must decode to 16, 24 or 32 bytes, got %d", n)
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("config: log_level: %w", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("config: log_format: want text or json, got %q", c.LogFormat)
	}
	if c.DeadServerGrace < 0 {
		return fmt.Errorf("config: dead_server_grace: must not be negative")
	}
	if c.ReadyMaxLag < 0 {
		return fmt.Errorf("config: ready_max_lag: must be >= 0, got %d", c.ReadyMaxLag)
	}
	if c.TickInterval != 0 && c.TickInterval < Duration(minTickInterval) {
		return fmt.Errorf("config: tick_interval: must be 0 (the default, 100ms) or at least %s, got %s", minTickInterval, time.Duration(c.TickInterval))
	}
	if err := c.checkSeries(); err != nil {
		return err
	}
	if err := c.checkRaftTiming(); err != nil {
		return err
	}
	if c.RestartTarget < 0 {
		return fmt.Errorf("config: restart_target: must be positive (or 0 for off), got %s", time.Duration(c.RestartTarget))
	}
	if c.LogCheckInterval < 0 || c.LogCheckInterval != 0 && time.Duration(c.LogCheckInterval) < minLogCheckInterval {
		// Below a tenth of a second the check would fetch its peers'
		// sums in a busy loop; a negative one used to fall back to the
		// default without a word.
		return fmt.Errorf("config: log_check_interval: must be at least %s (or 0 for %s), got %s",
			minLogCheckInterval, cluster.DefaultLogCheckInterval, time.Duration(c.LogCheckInterval))
	}
	if c.SnapshotInterval != 0 && time.Duration(c.SnapshotInterval) < 5*time.Millisecond {
		return fmt.Errorf("config: snapshot_interval: must be at least 5ms (or 0 for the raft default), got %s", time.Duration(c.SnapshotInterval))
	}
	if c.IdempotencyMaxKeys < 0 {
		return fmt.Errorf("config: idempotency_max_keys: must be >= 0, got %d", c.IdempotencyMaxKeys)
	}
	if err := c.checkRetention(); err != nil {
		return err
	}
	if c.RateLimit < 0 {
		return fmt.Errorf("config: rate_limit: must be >= 0, got %g", c.RateLimit)
	}
	if c.RateBurst < 0 {
		return fmt.Errorf("config: rate_burst: must be >= 0, got %d", c.RateBurst)
	}
	if c.MaxRequestBytes < 0 {
		return fmt.Errorf("config: max_request_bytes: must be >= 0, got %d", c.MaxRequestBytes)
	}
	if c.TokensFile != "" {
		// Read it whole, so that -config-check finds what the start would.
		if _, err := rpc.LoadAuthFile(c.TokensFile); err != nil {
			return fmt.Errorf("config: tokens_file: %w", err)
		}
	}
	if err := c.SlurmBridge.validate(); err != nil {
		return err
	}
	return c.checkSecure(dev)
}

// fsmConfig is the ledger's configuration. It decides what applying an
// entry does, so it must be the same on every server.
func (c *Config) fsmConfig() fsm.Config {
	return fsm.Config{IdempotencyMaxKeys: c.IdempotencyMaxKeys}
}

func checkHostPort(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", v)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("bad port in %q", v)
	}
	_ = host
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("want debug, info, warn or error, got %q", s)
}

// NewLogger builds the agent's slog logger.
func (c *Config) NewLogger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// checkRaftTiming refuses Raft timeouts that Raft would refuse, naming the
// key: each at least 5ms (or 0 for the default), the leader lease at most
// the heartbeat timeout, the election timeout at least the heartbeat
// timeout; and a negative forward timeout.
func (c *Config) checkRaftTiming() error {
	or := func(d Duration, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return time.Duration(d)
	}
	for _, k := range []struct {
		key string
		d   Duration
	}{{"raft_heartbeat_timeout", c.RaftHeartbeatTimeout}, {"raft_election_timeout", c.RaftElectionTimeout}, {"raft_leader_lease_timeout", c.RaftLeaderLeaseTimeout}} {
		if k.d != 0 && time.Duration(k.d) < 5*time.Millisecond {
			return fmt.Errorf("config: %s: must be at least 5ms (or 0 for the default), got %s", k.key, time.Duration(k.d))
		}
	}
	hb, el, lease := or(c.RaftHeartbeatTimeout, time.Second), or(c.RaftElectionTimeout, time.Second), or(c.RaftLeaderLeaseTimeout, 500*time.Millisecond)
	if lease > hb {
		return fmt.Errorf("config: raft_leader_lease_timeout: must not exceed raft_heartbeat_timeout (%s), got %s", hb, lease)
	}
	if el < hb {
		return fmt.Errorf("config: raft_election_timeout: must be at least raft_heartbeat_timeout (%s), got %s", hb, el)
	}
	if c.ForwardTimeout != 0 && c.ForwardTimeout < Duration(minForwardTimeout) {
		return fmt.Errorf("config: forward_timeout: must be 0 (the default, 10s) or at least %s, got %s", minForwardTimeout, time.Duration(c.ForwardTimeout))
	}
	switch c.RaftLogStore {
	case "", cluster.LogStoreBoltDB, cluster.LogStoreWAL:
	default:
		return fmt.Errorf("config: raft_log_store: want %q or %q (or empty), got %q", cluster.LogStoreBoltDB, cluster.LogStoreWAL, c.RaftLogStore)
	}
	return nil
}
