package packaging_test

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
)

// TestExampleConfigIsSecureAndAccepted runs ledgerd.json.example through
// `ledgerd agent -config-check` with the files it names (made with
// agent/pki, what `ledgerd tls` uses) moved under a scratch directory and
// the gossip key in the environment, as the unit passes it from
// ledgerd.env: the binary accepts it. The same config without any one of
// its security keys is refused, so the example cannot drift into one that
// only starts with -insecure.
func TestExampleConfigIsSecureAndAccepted(t *testing.T) {
	b, err := os.ReadFile("ledgerd.json.example")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("ledgerd.json.example is not JSON: %v", err)
	}
	if _, ok := cfg["insecure"]; ok {
		t.Fatal("the example config is insecure")
	}
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.NewCA("example CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue(pki.Request{Server: true, Name: "ledgerd-0", IPs: []net.IP{net.ParseIP("10.0.1.10")}, Now: now, ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{
		"tls_ca_file": ca.CertPEM, "tls_cert_file": cert, "tls_key_file": key,
		"tokens_file": []byte(`{"tokens": [{"token": "example-only-token", "tenant": "ops", "operator": true}]}`),
	}
	for k, v := range contents {
		p, ok := cfg[k].(string)
		if !ok {
			t.Fatalf("the example config lacks %s", k)
		}
		target := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, v, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg[k] = target
	}
	cfg["data_dir"] = filepath.Join(dir, "data")
	gossip := "LEDGERD_GOSSIP_KEY=ZXhhbXBsZS1vbmx5LWdvc3NpcC1rZXktMzItYnl0ZXM="
	check := func(c map[string]any) (string, error) {
		t.Helper()
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "ledgerd.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(ledgerdBinary(t), "agent", "-config", path, "-config-check")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "LEDGERD_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, gossip)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check(cfg); err != nil || !strings.Contains(out, "configuration OK") {
		t.Fatalf("ledgerd rejected the example config (%v):\n%s", err, out)
	}
	for _, key := range []string{"tls_cert_file", "tls_verify_incoming", "tls_http", "tokens_file"} {
		t.Run("without "+key, func(t *testing.T) {
			c := map[string]any{}
			for k, v := range cfg {
				if k != key {
					c[k] = v
				}
			}
			if out, err := check(c); err == nil {
				t.Fatalf("ledgerd accepted the example without %s:\n%s", key, out)
			} else if !strings.Contains(out, key) {
				t.Errorf("the refusal does not name %s:\n%s", key, out)
			}
		})
	}
	t.Run("without the gossip key", func(t *testing.T) {
		saved := gossip
		gossip = "LEDGERD_UNUSED=1"
		defer func() { gossip = saved }()
		if out, err := check(cfg); err == nil || !strings.Contains(out, "gossip_key") {
			t.Fatalf("ledgerd accepted the example without a gossip key (%v):\n%s", err, out)
		}
	})
}
