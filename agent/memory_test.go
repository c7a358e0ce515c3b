package agent

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestMemoryLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		args []string
		env  map[string]string
		want ByteSize
		err  string
	}{
		{"default", `{"data_dir":"d"}`, nil, nil, 0, ""},
		{"file string", `{"data_dir":"d","memory_limit":"900MiB"}`, nil, nil, 900 << 20, ""},
		{"file number", `{"data_dir":"d","memory_limit":123456}`, nil, nil, 123456, ""},
		{"env", `{"data_dir":"d"}`, nil, map[string]string{"LEDGERD_MEMORY_LIMIT": "2GiB"}, 2 << 30, ""},
		{"flag over file", `{"data_dir":"d","memory_limit":"1GiB"}`, []string{"-memory-limit", "512KiB"}, nil, 512 << 10, ""},
		{"bytes unit", `{"data_dir":"d","memory_limit":"77B"}`, nil, nil, 77, ""},
		{"bad unit", `{"data_dir":"d","memory_limit":"9GB"}`, nil, nil, 0, "memory_limit"},
		{"negative", `{"data_dir":"d"}`, []string{"-memory-limit", "-1"}, nil, 0, "memory-limit"},
		{"fraction", `{"data_dir":"d","memory_limit":"1.5GiB"}`, nil, nil, 0, "memory_limit"},
		{"overflow", `{"data_dir":"d"}`, nil, map[string]string{"LEDGERD_MEMORY_LIMIT": "9000000000TiB"}, 0, "LEDGERD_MEMORY_LIMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-insecure", "-config", writeConfig(t, tc.file)}, tc.args...)
			cfg, _, err := ParseArgs(args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || cfg.MemoryLimit != tc.want {
				t.Fatalf("memory_limit = %d (%v), want %d", cfg.MemoryLimit, err, tc.want)
			}
		})
	}
}

// TestByteSizeKeys: the other keys of type ByteSize (snapshot_log_bytes,
// gc_headroom, gc_min_heap) read the same spellings, default to off, and a bad
// value's error names its own key, not memory_limit.
func TestByteSizeKeys(t *testing.T) {
	for _, k := range []struct {
		key, flag string
		get       func(Config) ByteSize
	}{
		{"snapshot_log_bytes", "-snapshot-log-bytes", func(c Config) ByteSize { return c.SnapshotLogBytes }},
		{"gc_headroom", "-gc-headroom", func(c Config) ByteSize { return c.GCHeadroom }},
		{"gc_min_heap", "-gc-min-heap", func(c Config) ByteSize { return c.GCMinHeap }},
	} {
		with := func(v string) string { return `{"data_dir":"d","` + k.key + `":` + v + `}` }
		for _, tc := range []struct {
			name string
			file string
			args []string
			want ByteSize
			err  string
		}{
			{"default: off", `{"data_dir":"d"}`, nil, 0, ""},
			{"zero", with("0"), nil, 0, ""},
			{"number", with("4096"), nil, 4096, ""},
			{"file string", with(`"32MiB"`), nil, 32 << 20, ""},
			{"flag over file", with(`"32MiB"`), []string{k.flag, "4MiB"}, 4 << 20, ""},
			{"bad unit", with(`"9MB"`), nil, 0, `key "` + k.key + `": want a non-negative integer of bytes`},
			{"bad flag", `{"data_dir":"d"}`, []string{k.flag, "lots"}, 0, k.flag[1:]},
			{"not a number", with("true"), nil, 0, `key "` + k.key + `"`},
		} {
			t.Run(k.key+"/"+tc.name, func(t *testing.T) {
				args := append([]string{"-insecure", "-config", writeConfig(t, tc.file)}, tc.args...)
				cfg, _, err := ParseArgs(args, func(string) string { return "" }, io.Discard)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "memory_limit") {
						t.Fatalf("error = %v, want one containing %s", err, tc.err)
					}
					return
				}
				if got := k.get(cfg); err != nil || got != tc.want {
					t.Fatalf("%s = %d (%v), want %d", k.key, got, err, tc.want)
				}
			})
		}
	}
}

func TestApplyMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	debug.SetMemoryLimit(math.MaxInt64)
	(&Agent{cfg: Config{}, log: log}).applyMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory_limit 0 changed the runtime's limit to %d", got)
	}
	(&Agent{cfg: Config{MemoryLimit: 700 << 20}, log: log}).applyMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 700<<20 {
		t.Fatalf("runtime limit = %d, want %d", got, 700<<20)
	}
}
