package service

import (
	"strings"
	"testing"
)

// TestWriteSummary: one row per series in run order, one column per
// client count of the mix, a dash for a count the series did not run,
// throughput and CPU of all processes side by side; the client mode is
// named once.
func TestWriteSummary(t *testing.T) {
	rs, err := ReadResults("testdata/bars.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mix  string
		want []string // the table's lines, in order
	}{
		{"default", []string{
			"default mix: committed reservations/s · CPU µs per operation, all processes of the system",
			"",
			"| system | 1 clients | 16 clients | 64 clients | 256 clients |",
			"|---|---:|---:|---:|---:|",
			"| ledgerd 3 nodes, coalesced client | 150 · 1000 µs | 800 · 1000 µs | 1900 · 1000 µs | 3000 · 1000 µs |",
			"| postgresql 1 nodes | 700 · 450 µs | 2000 · 450 µs | 1800 · 450 µs | 200 · 450 µs |",
			"| postgresql primary + sync standby | 300 · 650 µs | 400 · 650 µs | 1000 · 650 µs | — |",
			"| etcd 3 nodes | 200 · 850 µs | 450 · 850 µs | 380 · 850 µs | 500 · 850 µs |",
			"| ledgerd 3 nodes, unary | — | — | 900 · 800 µs | — |",
			"| ledgerd 3 nodes, no TLS, coalesced client | — | — | 2100 · 890 µs | — |",
			"| etcd 3 nodes, no TLS | — | — | 400 · 600 µs | — |",
		}},
		{"reserve", []string{
			"reserve mix: writes/s · CPU µs per operation, all processes of the system",
			"",
			"| system | 1 clients | 64 clients |",
			"|---|---:|---:|",
			"| ledgerd 3 nodes, coalesced client | 400 · 1700 µs | 8000 · 300 µs |",
			"| raw raft 3 nodes | 1000 · 700 µs | 10000 · 100 µs |",
			"| ledgerd 3 nodes, no TLS, coalesced client | — | 13000 · 270 µs |",
			"| raw raft 3 nodes, no TLS | — | 12000 · 90 µs |",
		}},
		{"none such", nil},
	} {
		t.Run(tc.mix, func(t *testing.T) {
			var b strings.Builder
			if err := WriteSummary(&b, rs, tc.mix); err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.want != nil {
				want = strings.Join(tc.want, "\n") + "\n\n"
			}
			if b.String() != want {
				t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
}
