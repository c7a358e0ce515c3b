package agent

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ledgerd.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAgentConfigRejectsBadInputNamingTheKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown key", `{"data_dir":"d","raft_adress":"x"}`, nil, nil, `"raft_adress"`},
		{"wrong type", `{"data_dir":"d","bootstrap_expect":"three"}`, nil, nil, "bootstrap_expect"},
		{"bad duration", `{"data_dir":"d","dead_server_grace":"soon"}`, nil, nil, `key "dead_server_grace": want a duration string such as "30s" (units ns, us, ms, s, m, h), got "soon"`},
		{"duration as number", `{"data_dir":"d","snapshot_interval":30}`, nil, nil, `key "snapshot_interval": want a duration string`},
		{"nested duration", `{"data_dir":"d","slurm_bridge":{"resource":"b","horizon":"2 days"}}`, nil, nil, `key "slurm_bridge.horizon": want a duration string`},
		{"not an object", `["data_dir"]`, nil, nil, "want a JSON object of settings, got array"},
		{"list wanted", `{"data_dir":"d","retry_join":"a:1"}`, nil, nil, `key "retry_join": want a list of strings, got string`},
		{"object wanted", `{"data_dir":"d","slurm_bridge":{"resource":"b","tenant_map":{"t":["alice"]}}}`, nil, nil, `key "slurm_bridge.tenant_map": want an object, got array`},
		{"number wanted", `{"data_dir":"d","rate_limit":"fast"}`, nil, nil, `key "rate_limit": want a number, got string`},
		{"typo suggested", `{"data_dir":"d","snapshot_intervall":"1s"}`, nil, nil, `unknown key "snapshot_intervall" (did you mean "snapshot_interval"?)`},
		{"trailing", `{"data_dir":"d"} {}`, nil, nil, "trailing"},
		{"no data dir", `{}`, nil, nil, "data_dir"},
		{"bad addr", `{"data_dir":"d","raft_addr":"nowhere"}`, nil, nil, "raft_addr"},
		{"bad join", `{"data_dir":"d","retry_join":["a:1","b"]}`, nil, nil, "retry_join[1]"},
		{"negative expect", `{"data_dir":"d","bootstrap_expect":-1}`, nil, nil, "bootstrap_expect"},
		{"gossip key", `{"data_dir":"d","gossip_key":"c2hvcnQ="}`, nil, nil, "gossip_key"},
		{"log level", `{"data_dir":"d","log_level":"loud"}`, nil, nil, "log_level"},
		{"log format", `{"data_dir":"d","log_format":"xml"}`, nil, nil, "log_format"},
		{"tls half", `{"data_dir":"d","tls_cert_file":"c.pem"}`, nil, nil, "tls_key_file"},
		{"tls no ca", `{"data_dir":"d","tls_cert_file":"c.pem","tls_key_file":"k.pem"}`, nil, nil, "tls_ca_file"},
		{"tls missing files", `{"data_dir":"d","tls_cert_file":"c.pem","tls_key_file":"k.pem","tls_ca_file":"ca.pem"}`, nil, nil, "tls_cert_file"},
		{"env bad int", `{"data_dir":"d"}`, nil, map[string]string{"LEDGERD_BOOTSTRAP_EXPECT": "x"}, "LEDGERD_BOOTSTRAP_EXPECT"},
		{"flag bad bool", `{"data_dir":"d"}`, []string{"-tls-verify-incoming=maybe"}, nil, "tls-verify-incoming"},
		{"dev with expect", `{}`, []string{"-dev", "-bootstrap-expect", "3"}, nil, "bootstrap_expect"},
		{"http advertise", `{"data_dir":"d","http_addr":"0.0.0.0:7420"}`, nil, nil, "http_advertise"},
		{"rate limit", `{"data_dir":"d","rate_limit":-1}`, nil, nil, "rate_limit"},
		{"tokens file", `{"data_dir":"d","tokens_file":"/no/such/tokens.json"}`, nil, nil, "tokens_file"},
		{"tokens file content", `{"data_dir":"d"}`, []string{"-tokens-file", writeConfig(t, `{"tokens":[{"token":"short","tenant":"a"}]}`)}, nil, "tokens_file: auth: tokens file "},
		{"tokens file entry", `{"data_dir":"d"}`, []string{"-tokens-file", writeConfig(t, `{"tokens":[{"token":"short","tenant":"a"}]}`)}, nil, "tokens[0].token: at least 8 characters"},
		{"max request", `{"data_dir":"d"}`, []string{"-max-request-bytes", "big"}, nil, "max-request-bytes"},
		{"snapshot threshold", `{"data_dir":"d"}`, []string{"-snapshot-threshold", "-1"}, nil, "snapshot-threshold"},
		{"snapshot interval", `{"data_dir":"d","snapshot_interval":"1ms"}`, nil, nil, "snapshot_interval"},
		{"restart target", `{"data_dir":"d","restart_target":"-3s"}`, nil, nil, "restart_target"},
		{"log check interval negative", `{"data_dir":"d","log_check_interval":"-5s"}`, nil, nil, "log_check_interval: must be at least 100ms"},
		{"log check interval busy", `{"data_dir":"d"}`, []string{"-log-check-interval", "1ns"}, nil, "log_check_interval: must be at least 100ms"},
		{"restart target flag", `{"data_dir":"d"}`, []string{"-restart-target", "soon"}, nil, "restart-target"},
		{"tick interval", `{"data_dir":"d","tick_interval":"1ns"}`, nil, nil, "tick_interval: must be 0 (the default, 100ms) or at least 1ms, got 1ns"},
		{"tick interval negative", `{"data_dir":"d","tick_interval":"-1s"}`, nil, nil, "tick_interval: must be 0"},
		{"forward timeout", `{"data_dir":"d"}`, []string{"-forward-timeout", "1ns"}, nil, "forward_timeout: must be 0 (the default, 10s) or at least 100ms, got 1ns"},
		{"forward timeout negative", `{"data_dir":"d","forward_timeout":"-1s"}`, nil, nil, "forward_timeout: must be 0"},
		{"snapshot on shutdown", `{"data_dir":"d"}`, nil, map[string]string{"LEDGERD_SNAPSHOT_ON_SHUTDOWN": "sometimes"}, "LEDGERD_SNAPSHOT_ON_SHUTDOWN"},
		{"raft log store", `{"data_dir":"d","raft_log_store":"rocksdb"}`, nil, nil, "raft_log_store"},
		{"raft log store flag", `{"data_dir":"d"}`, []string{"-raft-log-store", "WAL"}, nil, "raft_log_store"},
		{"trailing logs type", `{"data_dir":"d","trailing_logs":"many"}`, nil, nil, "trailing_logs"},
		{"idempotency max keys", `{"data_dir":"d","idempotency_max_keys":-5}`, nil, nil, "idempotency_max_keys"},
		{"idempotency max keys flag", `{"data_dir":"d"}`, []string{"-idempotency-max-keys", "many"}, nil, "idempotency-max-keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-insecure", "-config", writeConfig(t, tc.file)}, tc.args...)
			_, _, err := ParseArgs(args, func(k string) string { return tc.env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestAgentConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `{"data_dir":"/file","node_name":"file","http_addr":"127.0.0.1:1","retry_join":["f:1"],
		"bootstrap_expect":3,"dead_server_grace":"1m","log_format":"json"}`)
	env := map[string]string{"LEDGERD_NODE_NAME": "env", "LEDGERD_HTTP_ADDR": "127.0.0.1:2", "LEDGERD_RETRY_JOIN": "e:1,e:2"}
	cfg, opts, err := ParseArgs([]string{"-insecure", "-config", file, "-http-addr", "127.0.0.1:3", "-retry-join", "a:1", "-retry-join", "b:1"},
		func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Dev || opts.ConfigFile != file {
		t.Fatalf("opts = %+v", opts)
	}
	for _, c := range []struct{ key, got, want string }{
		{"data_dir (file)", cfg.DataDir, "/file"},
		{"node_name (env over file)", cfg.NodeName, "env"},
		{"http_addr (flag over env)", cfg.HTTPAddr, "127.0.0.1:3"},
		{"raft_addr (default)", cfg.RaftAddr, "127.0.0.1:7421"},
		{"log_format (file)", cfg.LogFormat, "json"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.key, c.got, c.want)
		}
	}
	if !slices.Equal(cfg.RetryJoin, []string{"a:1", "b:1"}) {
		t.Errorf("retry_join = %q, want the flags' list", cfg.RetryJoin)
	}
	if cfg.BootstrapExpect != 3 || time.Duration(cfg.DeadServerGrace) != time.Minute {
		t.Errorf("expect %d grace %s", cfg.BootstrapExpect, time.Duration(cfg.DeadServerGrace))
	}
	// The environment alone replaces the file's retry_join list.
	cfg, _, err = ParseArgs([]string{"-insecure", "-config", file}, func(k string) string { return env[k] }, io.Discard)
	if err != nil || !slices.Equal(cfg.RetryJoin, []string{"e:1", "e:2"}) {
		t.Errorf("retry_join from env = %q (%v)", cfg.RetryJoin, err)
	}
}

func TestAgentConfigCheckAndHelp(t *testing.T) {
	good := writeConfig(t, `{"data_dir":"d","bootstrap_expect":3,"retry_join":["10.0.0.2:7422"],
		"gossip_key":"MDEyMzQ1Njc4OWFiY2RlZg=="}`)
	if _, opts, err := ParseArgs([]string{"-insecure", "-config", good, "-config-check"}, func(string) string { return "" }, io.Discard); err != nil || !opts.ConfigCheck {
		t.Fatalf("valid config: %v", err)
	}
	if _, _, err := ParseArgs([]string{"-help"}, func(string) string { return "" }, io.Discard); !errors.Is(err, errHelp()) {
		t.Fatalf("-help = %v", err)
	}
	if _, _, err := ParseArgs([]string{"extra"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("stray argument accepted")
	}
}

func errHelp() error { return flag.ErrHelp }

func TestAgentConfigSnapshotKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want Config
	}{
		{"defaults", `{"data_dir":"d"}`, nil, nil, Config{SnapshotThreshold: 16384, SnapshotInterval: Duration(10 * time.Second), TrailingLogs: 10240, SnapshotOnShutdown: true, RestartTarget: Duration(3 * time.Second)}},
		{"file", `{"data_dir":"d","snapshot_threshold":100,"snapshot_interval":"1m","trailing_logs":5,"snapshot_on_shutdown":false,"pprof":true,"restart_target":"0s"}`, nil, nil,
			Config{SnapshotThreshold: 100, SnapshotInterval: Duration(time.Minute), TrailingLogs: 5, Pprof: true}},
		{"env and flags", `{"data_dir":"d"}`, map[string]string{"LEDGERD_SNAPSHOT_ON_SHUTDOWN": "false", "LEDGERD_TRAILING_LOGS": "7", "LEDGERD_RESTART_TARGET": "5s"},
			[]string{"-snapshot-threshold", "9", "-snapshot-interval", "3s", "-pprof=true"},
			Config{SnapshotThreshold: 9, SnapshotInterval: Duration(3 * time.Second), TrailingLogs: 7, Pprof: true, RestartTarget: Duration(5 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := ParseArgs(append([]string{"-insecure", "-config", writeConfig(t, tc.file)}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got := Config{SnapshotThreshold: cfg.SnapshotThreshold, SnapshotInterval: cfg.SnapshotInterval,
				TrailingLogs: cfg.TrailingLogs, SnapshotOnShutdown: cfg.SnapshotOnShutdown, Pprof: cfg.Pprof, RestartTarget: cfg.RestartTarget}
			if got.SnapshotThreshold != tc.want.SnapshotThreshold || got.SnapshotInterval != tc.want.SnapshotInterval ||
				got.TrailingLogs != tc.want.TrailingLogs || got.SnapshotOnShutdown != tc.want.SnapshotOnShutdown || got.Pprof != tc.want.Pprof ||
				got.RestartTarget != tc.want.RestartTarget {
				t.Fatalf("snapshot settings = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAgentConfigIdempotencyMaxKeys checks that the key reaches the
// ledger's configuration from every source.
func TestAgentConfigIdempotencyMaxKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want int
	}{
		{"default", `{"data_dir":"d"}`, nil, nil, 0},
		{"file", `{"data_dir":"d","idempotency_max_keys":1000}`, nil, nil, 1000},
		{"env", `{"data_dir":"d","idempotency_max_keys":1000}`, map[string]string{"LEDGERD_IDEMPOTENCY_MAX_KEYS": "77"}, nil, 77},
		{"flag", `{"data_dir":"d"}`, map[string]string{"LEDGERD_IDEMPOTENCY_MAX_KEYS": "77"}, []string{"-idempotency-max-keys", "5"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := ParseArgs(append([]string{"-insecure", "-config", writeConfig(t, tc.file)}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.fsmConfig().IdempotencyMaxKeys; got != tc.want {
				t.Fatalf("IdempotencyMaxKeys = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestValuelessKeysAreBooleans: a flag given without a value must be a
// boolean key.
func TestValuelessKeysAreBooleans(t *testing.T) {
	for _, s := range settings {
		var c Config
		isBool := s.set(&c, "true") == nil && s.set(&c, "maybe") != nil && s.set(&c, "false") == nil
		if valuelessKeys[s.key] && !isBool {
			t.Errorf("key %s takes no value on the command line but is not a boolean", s.key)
		}
	}
	cfg, _, err := ParseArgs([]string{"-insecure", "-data-dir", "d", "-tls-http", "false"}, func(string) string { return "" }, io.Discard)
	if err != nil || !cfg.Insecure || cfg.TLSHTTP {
		t.Fatalf("-insecure alone and -tls-http false: %+v, %v", cfg, err)
	}
}
