package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
)

// agentConfig is the agent's configuration. A config file is JSON with
// exactly these keys (unknown keys are rejected); every key can also be set
// by the environment variable LEDGERD_<KEY> (upper case) and by the flag
// -<key> with dashes for underscores. Flags beat the environment, which
// beats the file, which beats the defaults.
type agentConfig struct {
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
	// verified against tls_ca_file. With tls_verify_incoming every API
	// client must present a certificate signed by tls_ca_file or
	// tls_http_client_ca_file.
	TLSHTTP             bool   `json:"tls_http"`
	TLSHTTPClientCAFile string `json:"tls_http_client_ca_file"`
	// GossipKey is base64 of 16, 24 or 32 bytes; it encrypts gossip.
	GossipKey       string   `json:"gossip_key"`
	LogLevel        string   `json:"log_level"`
	LogFormat       string   `json:"log_format"`
	DeadServerGrace duration `json:"dead_server_grace"`
	TickInterval    duration `json:"tick_interval"`
	// Snapshots: see cluster.Config. The defaults keep the log replayed
	// after a crash to about SnapshotThreshold plus two SnapshotIntervals
	// of writes; a graceful stop snapshots so the next start replays
	// almost nothing.
	SnapshotThreshold  uint64   `json:"snapshot_threshold"`
	SnapshotInterval   duration `json:"snapshot_interval"`
	TrailingLogs       uint64   `json:"trailing_logs"`
	SnapshotOnShutdown bool     `json:"snapshot_on_shutdown"`
	// MemoryLimit is the Go runtime's soft memory limit in bytes (0: the
	// runtime's own, from GOMEMLIMIT or none); see applyMemoryLimit.
	MemoryLimit byteSize `json:"memory_limit"`
	// IdempotencyMaxKeys caps the idempotency keys the ledger remembers
	// (0: fsm.DefaultIdempotencyMaxKeys); see fsmConfig. Every server of
	// a cluster must use the same value.
	IdempotencyMaxKeys int `json:"idempotency_max_keys"`
	// Pprof serves net/http/pprof under /debug/pprof/ on the HTTP port.
	Pprof bool `json:"pprof"`
	// Public API settings (see rpc.Options).
	TokensFile      string   `json:"tokens_file"`
	CORSOrigins     []string `json:"cors_origins"`
	RateLimit       float64  `json:"rate_limit"`
	RateBurst       int      `json:"rate_burst"`
	MaxRequestBytes int      `json:"max_request_bytes"`
}

// duration is a time.Duration written as a Go duration string ("30s").
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func defaultAgentConfig() agentConfig {
	return agentConfig{
		HTTPAddr:   "127.0.0.1:7420",
		RaftAddr:   "127.0.0.1:7421",
		GossipAddr: "127.0.0.1:7422",
		LogLevel:   "info",
		LogFormat:  "text",

		SnapshotThreshold:  DefaultSnapshotThreshold,
		SnapshotInterval:   duration(DefaultSnapshotInterval),
		TrailingLogs:       DefaultTrailingLogs,
		SnapshotOnShutdown: true,
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

// setting describes one configuration key and how to set it from a string.
type setting struct {
	key  string
	help string
	set  func(c *agentConfig, v string) error
}

func str(p func(*agentConfig) *string) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error { *p(c) = v; return nil }
}

var settings = []setting{
	{"node_name", "human-readable server name (default: host name)", str(func(c *agentConfig) *string { return &c.NodeName })},
	{"data_dir", "directory for the Raft log, snapshots and node-id", str(func(c *agentConfig) *string { return &c.DataDir })},
	{"http_addr", "host:port of the HTTP API (Connect, gRPC, gRPC-Web, /metrics, /healthz)", str(func(c *agentConfig) *string { return &c.HTTPAddr })},
	{"http_advertise", "host:port peers use to reach the HTTP API (default http_addr)", str(func(c *agentConfig) *string { return &c.HTTPAdvertise })},
	{"raft_addr", "host:port the Raft transport binds", str(func(c *agentConfig) *string { return &c.RaftAddr })},
	{"raft_advertise", "host:port peers dial for Raft (default raft_addr)", str(func(c *agentConfig) *string { return &c.RaftAdvertise })},
	{"gossip_addr", "host:port gossip binds (TCP and UDP)", str(func(c *agentConfig) *string { return &c.GossipAddr })},
	{"gossip_advertise", "host:port peers reach gossip at (default gossip_addr)", str(func(c *agentConfig) *string { return &c.GossipAdvertise })},
	{"retry_join", "gossip host:port to join; repeat the flag or separate with commas", func(c *agentConfig, v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.RetryJoin = append(c.RetryJoin, a)
			}
		}
		return nil
	}},
	{"bootstrap_expect", "servers to wait for before bootstrapping a new cluster", func(c *agentConfig, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer: %w", err)
		}
		c.BootstrapExpect = n
		return nil
	}},
	{"tls_cert_file", "PEM certificate of this server (Raft TLS)", str(func(c *agentConfig) *string { return &c.TLSCertFile })},
	{"tls_key_file", "PEM private key of this server (Raft TLS)", str(func(c *agentConfig) *string { return &c.TLSKeyFile })},
	{"tls_ca_file", "PEM CA bundle that signs the servers' certificates", str(func(c *agentConfig) *string { return &c.TLSCAFile })},
	{"tls_verify_incoming", "require peers to present a certificate (mutual TLS)", boolSetter(func(c *agentConfig) *bool { return &c.TLSVerifyIncoming })},
	{"tls_http", "serve the HTTP API over TLS (HTTP/2 and HTTP/1.1) with tls_cert_file/tls_key_file; peers reach it over https checked against tls_ca_file", boolSetter(func(c *agentConfig) *bool { return &c.TLSHTTP })},
	{"tls_http_client_ca_file", "PEM CA bundle that signs API clients' certificates (with tls_http and tls_verify_incoming; tls_ca_file is always accepted)", str(func(c *agentConfig) *string { return &c.TLSHTTPClientCAFile })},
	{"gossip_key", "base64 key (16, 24 or 32 bytes) that encrypts gossip", str(func(c *agentConfig) *string { return &c.GossipKey })},
	{"log_level", "debug, info, warn or error", str(func(c *agentConfig) *string { return &c.LogLevel })},
	{"log_format", "text or json", str(func(c *agentConfig) *string { return &c.LogFormat })},
	{"dead_server_grace", "how long a failed server stays in Raft before removal", func(c *agentConfig, v string) error {
		d, err := time.ParseDuration(v)
		c.DeadServerGrace = duration(d)
		return err
	}},
	{"tick_interval", "how often the leader expires holds", func(c *agentConfig, v string) error {
		d, err := time.ParseDuration(v)
		c.TickInterval = duration(d)
		return err
	}},
	{"snapshot_threshold", "entries logged since the last snapshot that make the next check take one", uintSetter(func(c *agentConfig) *uint64 { return &c.SnapshotThreshold })},
	{"snapshot_interval", "how often to check whether a snapshot is due (randomly up to twice as long)", func(c *agentConfig, v string) error {
		d, err := time.ParseDuration(v)
		c.SnapshotInterval = duration(d)
		return err
	}},
	{"trailing_logs", "log entries kept behind a snapshot for lagging followers", uintSetter(func(c *agentConfig) *uint64 { return &c.TrailingLogs })},
	{"snapshot_on_shutdown", "take a snapshot on graceful shutdown so the next start replays almost nothing", boolSetter(func(c *agentConfig) *bool { return &c.SnapshotOnShutdown })},
	{"memory_limit", "soft limit on the process's memory, e.g. 900MiB: the Go collector works harder near it (0: none, or GOMEMLIMIT)", func(c *agentConfig, v string) error {
		n, err := parseByteSize(v)
		c.MemoryLimit = n
		return err
	}},
	{"idempotency_max_keys", "idempotency keys remembered at most, oldest forgotten first; the same on every server (0: 262144)", intSetter(func(c *agentConfig) *int { return &c.IdempotencyMaxKeys })},
	{"pprof", "serve Go profiles under /debug/pprof/ on the HTTP port (debugging only)", boolSetter(func(c *agentConfig) *bool { return &c.Pprof })},
	{"tokens_file", "API bearer-token file; empty turns API authentication off", str(func(c *agentConfig) *string { return &c.TokensFile })},
	{"cors_origins", "browser origins allowed to call the API; repeat or separate with commas", func(c *agentConfig, v string) error {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.CORSOrigins = append(c.CORSOrigins, o)
			}
		}
		return nil
	}},
	{"rate_limit", "API calls per second per tenant; 0 disables", func(c *agentConfig, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("want a number: %w", err)
		}
		c.RateLimit = f
		return nil
	}},
	{"rate_burst", "API rate-limit bucket size (default rate_limit)", intSetter(func(c *agentConfig) *int { return &c.RateBurst })},
	{"max_request_bytes", "largest API request message", intSetter(func(c *agentConfig) *int { return &c.MaxRequestBytes })},
}

func uintSetter(p func(*agentConfig) *uint64) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want a non-negative integer: %w", err)
		}
		*p(c) = n
		return nil
	}
}

func boolSetter(p func(*agentConfig) *bool) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false: %w", err)
		}
		*p(c) = b
		return nil
	}
}

func intSetter(p func(*agentConfig) *int) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
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
func resetList(c *agentConfig, key string) {
	switch key {
	case "retry_join":
		c.RetryJoin = nil
	case "cors_origins":
		c.CORSOrigins = nil
	}
}

func envName(key string) string { return "LEDGERD_" + strings.ToUpper(key) }

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// loadConfigFile reads a JSON config file; unknown keys are errors.
func loadConfigFile(path string, c *agentConfig) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("config %s: key %q: want %s, got %s", path, te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("config %s: %w", path, err)
	}
	if dec.More() {
		return fmt.Errorf("config %s: trailing data after the JSON object", path)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("config %s: trailing data after the JSON object", path)
	}
	return nil
}

// applyEnv sets every key whose LEDGERD_* variable is set.
func applyEnv(c *agentConfig, getenv func(string) string) error {
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
		fs.Func(flagName(s.key), s.help+" (env "+envName(s.key)+")", func(v string) error {
			fv.order = append(fv.order, struct {
				s setting
				v string
			}{s, v})
			return nil
		})
	}
}

func (fv *flagValues) apply(c *agentConfig) error {
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

// validate checks the configuration and names the offending key.
func (c *agentConfig) validate(dev bool) error {
	if c.DataDir == "" && !dev {
		return errors.New("config: data_dir is required (or run with -dev)")
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
	if c.TLSHTTPClientCAFile != "" && (!c.TLSHTTP || !c.TLSVerifyIncoming) {
		return errors.New("config: tls_http_client_ca_file: only used with tls_http and tls_verify_incoming")
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
	if c.TickInterval < 0 {
		return fmt.Errorf("config: tick_interval: must not be negative")
	}
	if c.SnapshotInterval != 0 && time.Duration(c.SnapshotInterval) < 5*time.Millisecond {
		return fmt.Errorf("config: snapshot_interval: must be at least 5ms (or 0 for the raft default), got %s", time.Duration(c.SnapshotInterval))
	}
	if c.IdempotencyMaxKeys < 0 {
		return fmt.Errorf("config: idempotency_max_keys: must be >= 0, got %d", c.IdempotencyMaxKeys)
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
		if _, err := os.Stat(c.TokensFile); err != nil {
			return fmt.Errorf("config: tokens_file: %w", err)
		}
	}
	return nil
}

// fsmConfig is the ledger's configuration. It decides what applying an
// entry does, so it must be the same on every server.
func (c *agentConfig) fsmConfig() fsm.Config {
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

// raftTLS builds the Raft transport's TLS configuration, or nil.
func (c *agentConfig) raftTLS() (*tls.Config, error) {
	if c.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("config: tls_cert_file/tls_key_file: %w", err)
	}
	pem, err := os.ReadFile(c.TLSCAFile)
	if err != nil {
		return nil, fmt.Errorf("config: tls_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("config: tls_ca_file: no PEM certificates in %s", c.TLSCAFile)
	}
	conf := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.NoClientCert,
	}
	if c.TLSVerifyIncoming {
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}

// loadCAPool reads a PEM bundle; key names the config key in errors.
func loadCAPool(pool *x509.CertPool, key, path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %s: %w", key, err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("config: %s: no PEM certificates in %s", key, path)
	}
	return nil
}

// httpTLS builds the TLS configurations of the HTTP API: server is what
// the listener serves (HTTP/2 and HTTP/1.1 via ALPN, client certificates
// required with tls_verify_incoming), peer is what this node presents and
// checks when it calls another server's API. Both are nil without tls_http.
func (c *agentConfig) httpTLS() (server, peer *tls.Config, err error) {
	if !c.TLSHTTP {
		return nil, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("config: tls_cert_file/tls_key_file: %w", err)
	}
	servers := x509.NewCertPool()
	if err := loadCAPool(servers, "tls_ca_file", c.TLSCAFile); err != nil {
		return nil, nil, err
	}
	clients := x509.NewCertPool()
	if err := loadCAPool(clients, "tls_ca_file", c.TLSCAFile); err != nil {
		return nil, nil, err
	}
	if c.TLSHTTPClientCAFile != "" {
		if err := loadCAPool(clients, "tls_http_client_ca_file", c.TLSHTTPClientCAFile); err != nil {
			return nil, nil, err
		}
	}
	server = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		ClientCAs:    clients,
		ClientAuth:   tls.NoClientCert,
	}
	if c.TLSVerifyIncoming {
		server.ClientAuth = tls.RequireAndVerifyClientCert
	}
	peer = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: servers}
	return server, peer, nil
}

// newLogger builds the agent's slog logger.
func (c *agentConfig) newLogger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
