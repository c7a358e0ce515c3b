package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkApply measures replicated writes of small commands on real
// raft-boltdb stores over loopback TCP: on the leader, forwarded from a
// follower, and with several concurrent clients per iteration (Raft
// batches their entries). Each iteration is `clients` writes.
func BenchmarkApply(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		for _, path := range []string{"leader", "follower"} {
			if nodes == 1 && path == "follower" {
				continue
			}
			for _, clients := range []int{1, 16} {
				b.Run(fmt.Sprintf("nodes=%d/via=%s/clients=%d", nodes, path, clients), func(b *testing.B) {
					benchApply(b, nodes, path, clients)
				})
			}
		}
	}
}

func benchApply(b *testing.B, nodes int, path string, clients int) {
	quiet := func(cfg *Config) { cfg.Dev = nodes == 1 }
	c := newCluster(b, nodes, quiet)
	if nodes > 1 {
		c.waitVoters(nodes)
	}
	target := c.leader().node
	if path == "follower" {
		target = c.follower().node
	}
	var seq atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := seq.Add(1)
				if _, err := target.Apply(ctx, fmt.Appendf(nil, "b%d|payload-%064d", id, id)); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.N*clients)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkReadBarrier measures the cost of a linearizable read: on the
// leader (heartbeat round) and on a follower (plus an HTTP round trip to
// the leader and a wait for the local FSM).
func BenchmarkReadBarrier(b *testing.B) {
	c := newCluster(b, 3, nil)
	c.waitVoters(3)
	apply(b, c.leader(), "seed|x")
	for _, who := range []string{"leader", "follower"} {
		b.Run("on="+who, func(b *testing.B) {
			tn := c.leader()
			if who == "follower" {
				tn = c.follower()
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := tn.node.ReadBarrier(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyBatch measures ApplyBatch of 64 small commands per
// iteration on a three-node cluster, on the leader and forwarded by a
// follower: compare writes/s with BenchmarkApply's concurrent clients.
func BenchmarkApplyBatch(b *testing.B) {
	for _, path := range []string{"leader", "follower"} {
		b.Run("nodes=3/via="+path+"/batch=64", func(b *testing.B) {
			c := newCluster(b, 3, nil)
			c.waitVoters(3)
			target := c.leader().node
			if path == "follower" {
				target = c.follower().node
			}
			var seq int
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				cmds := make([][]byte, 64)
				for i := range cmds {
					seq++
					cmds[i] = fmt.Appendf(nil, "b%d|payload-%064d", seq, seq)
				}
				for _, r := range target.ApplyBatch(ctx, cmds) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
