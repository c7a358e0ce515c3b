package agent

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestConfigFileNullKeepsDefaults: null for a duration or a byte size
// leaves the key's value as it was, as null does for the plain types,
// instead of failing on an empty string.
func TestConfigFileNullKeepsDefaults(t *testing.T) {
	c := DefaultConfig()
	c.MemoryLimit = 5 << 20
	if err := decodeConfigFile("f", []byte(`{"restart_target":null,"memory_limit":null,"node_name":null}`), &c); err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.RestartTarget) != DefaultRestartTarget || c.MemoryLimit != 5<<20 {
		t.Fatalf("restart_target %v, memory_limit %d: want the values before the file", time.Duration(c.RestartTarget), c.MemoryLimit)
	}
}

// TestNearestKey: a typo of a key at any depth is named, a word far from
// every key is not.
func TestNearestKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"raft_adress", "raft_addr"},
		{"snapshot_intervall", "snapshot_interval"},
		{"max_unit", "max_units"},
		{"partiton", "partition"},
		{"zzzzzz", ""},
		{"x", ""},
	} {
		if got := nearestKey(tc.in); got != tc.want {
			t.Errorf("nearestKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzConfigFile: any bytes decode into a config or give an error that
// names the file, and any error of a key's value names the key; a config
// that decodes validates without panicking and comes back unchanged from
// its own JSON.
func FuzzConfigFile(f *testing.F) {
	for _, p := range []string{"../packaging/ledgerd.json.example", "../deploy/terraform/testdata/rendered/production/ledgerd-0/ledgerd.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"data_dir":"d","snapshot_interval":"10s","memory_limit":"900MiB","retry_join":["a:1"]}`,
		`{"slurm_bridge":{"resource":"b","horizon":"48h","tenant_map":{"t":{"users":["u"]}}}}`,
		`{"tenant_limits":[{"tenant":"a","max_units":4,"window":"24h"}]}`,
		`{"restart_target":null,"gc_headroom":256}`,
		`{"snapshot_interval":30}`, `[]`, `{"rate_limit":1e400}`, `{"data_dir":"d"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := DefaultConfig()
		err := decodeConfigFile("f.json", b, &c)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "config f.json: ") || strings.Contains(msg, `: key "": `) {
				t.Fatalf("error %q: want one that names the file and a non-empty key", msg)
			}
			return
		}
		// Validate reads the tokens file; the fuzzer's paths may name
		// anything (a device that never ends), so it reads none.
		v := c
		v.TokensFile = ""
		_ = v.Validate(true)
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal %+v: %v", c, err)
		}
		back := DefaultConfig()
		if err := decodeConfigFile("f.json", out, &back); err != nil {
			t.Fatalf("own JSON %s: %v", out, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip changed the config:\n got %+v\nwant %+v", back, c)
		}
	})
}
