package service

import (
	"strings"
	"testing"
)

// TestWriteTLSCost: cells are paired with their twin of the other TLS
// setting whichever setting ran first, and the ratios are TLS ÷ none.
func TestWriteTLSCost(t *testing.T) {
	cell := func(system, label, mix string, clients int, ops, cpu float64) *Result {
		return &Result{System: system, Label: label, Mix: mix, Clients: clients, OpsPerSecond: ops, Committed: ops / 2, CommittedP99: 10, CPUOwnPerOp: cpu}
	}
	for _, tc := range []struct {
		name string
		rs   []*Result
		want []string // rows, in order
	}{
		{"TLS first", []*Result{
			cell("etcd", "3 nodes", "default", 64, 400, 120),
			cell("etcd", "3 nodes, no TLS", "default", 64, 500, 100),
			cell("etcd", "3 nodes", "default", 16, 300, 100), // no twin: left out
		}, []string{"| etcd 3 nodes | default | 64 | 400 / 500 (0.80) | 200 / 250 (0.80) | 10.0 / 10.0 (1.00) | 120 / 100 (1.20) |"}},
		{"no TLS first", []*Result{
			cell("raw raft", "3 nodes", "reserve", 64, 1000, 50),
			cell("raw raft", "3 nodes, TLS", "reserve", 64, 900, 60),
		}, []string{"| raw raft 3 nodes | reserve | 64 | 900 / 1000 (0.90) | 450 / 500 (0.90) | 10.0 / 10.0 (1.00) | 60 / 50 (1.20) |"}},
		{"different mixes never pair", []*Result{
			cell("etcd", "3 nodes", "default", 64, 400, 120),
			cell("etcd", "3 nodes, no TLS", "reserve", 64, 500, 100),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteTLSCost(&b, tc.rs); err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| system") {
					rows = append(rows, l)
				}
			}
			if strings.Join(rows, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
