package agent

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/internal/rtmetric"
)

// gcHeadroomMinPercent is the lowest GOGC the headroom sets: below it the
// collector's CPU per allocated byte would grow without bound as the live
// heap does, while its memory headroom no longer shrinks much.
const gcHeadroomMinPercent = 50

// gcPolicyPoll is how often the live heap is read. A node holding a
// million reservations collects every few seconds under load; between
// polls its setting is at most one cycle late.
const gcPolicyPoll = 500 * time.Millisecond

// gcMinHeapMaxPercent is the highest GOGC gc_min_heap sets: a live heap
// so small that reaching the floor would take more does not cost the
// collector much CPU anyway.
const gcMinHeapMaxPercent = 1000

// gcPercentFor returns the GOGC for a heap of live bytes under the two
// policies, headroom (gc_headroom) and floor (gc_min_heap), either 0 for
// off:
//   - above headroom, 100*headroom/live, never below gcHeadroomMinPercent:
//     the heap grows by at most headroom between collections;
//   - under half of floor, 100*(floor-live)/live, never above
//     gcMinHeapMaxPercent: the next collection comes when the heap reaches
//     floor instead of twice the live heap;
//   - otherwise 100, the runtime's default (also while nothing was
//     measured yet: live 0).
//
// Where both apply (a floor above twice the headroom), the headroom wins:
// it is the one that bounds memory.
//
// With GOGC 100 the heap doubles between collections, so a node's resident
// memory is about twice its live data: 1 GiB for a million reservations
// (benchmarks/results/recovery-1m/round10-rowtable). Large nodes may trade
// collector CPU and tail latency for memory: at 1M reservations a headroom
// of 256 MiB held the node at 877-927 MiB at its peak under load instead of
// 1,018-1,029 MiB, for about a tenth more CPU per operation and a p99 13-44
// % higher, which is why it is off unless configured. Small nodes may trade
// the other way: at 10k reservations the live heap is tens of MiB, and a
// collection every few tens of MiB allocated is a measurable share of the
// write path's CPU (benchmarks/results/write-path-10, GOGC 400 against 100).
func gcPercentFor(live, headroom, floor uint64) int {
	switch {
	case live == 0:
		return 100
	case headroom > 0 && live > headroom:
		return max(gcHeadroomMinPercent, int(100*headroom/live))
	case floor > 0 && live < floor/2:
		return min(gcMinHeapMaxPercent, int(100*(floor-live)/live))
	}
	return 100
}

// gcPolicy keeps GOGC at gcPercentFor of the live heap, as measured by
// the last collection.
type gcPolicy struct {
	headroom, floor uint64
	// read returns the live heap after the last collection.
	read func() uint64
	// set applies a GOGC setting (cluster.SetGCPercent).
	set func(int)
	// percent is the setting last applied; 100 until the first change,
	// as the runtime starts with it (the headroom does not run when GOGC
	// is set in the environment).
	percent int
	log     *slog.Logger
}

// step reads the live heap and changes GOGC if its percent differs from
// the last one by 5 % of the larger or more (or is back at 100): small
// moves of the live heap do not change the setting at every poll.
func (g *gcPolicy) step() {
	live := g.read()
	p := gcPercentFor(live, g.headroom, g.floor)
	if p == g.percent || (p != 100 && 20*abs(p-g.percent) < max(p, g.percent)) {
		return
	}
	g.set(p)
	if g.log != nil {
		g.log.Debug("GOGC set for the collector's headroom or floor", "gogc", p, "previous", g.percent, "live_bytes", live)
	}
	g.percent = p
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// liveHeap reads the heap the last collection found live.
func liveHeap() uint64 { return rtmetric.Uint64("/gc/heap/live:bytes") }

// keepGCPolicy runs the gc_headroom and gc_min_heap policies until ctx
// ends: it polls the live heap and sets GOGC (through the cluster, which
// holds the collector off during a snapshot restore and puts the setting
// back after it), and puts back GOGC 100 when it ends. It does nothing when
// both are 0 or GOGC is set in the environment, which then decides.
func (a *Agent) keepGCPolicy(ctx context.Context) {
	if a.cfg.GCHeadroom <= 0 && a.cfg.GCMinHeap <= 0 {
		return
	}
	if v, ok := os.LookupEnv("GOGC"); ok {
		a.log.Info("gc_headroom and gc_min_heap not applied: GOGC is set in the environment", "GOGC", v)
		return
	}
	g := &gcPolicy{headroom: uint64(a.cfg.GCHeadroom), floor: uint64(a.cfg.GCMinHeap), read: liveHeap,
		set: cluster.SetGCPercent, percent: 100, log: a.log}
	go func() {
		t := time.NewTicker(gcPolicyPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				if g.percent != 100 {
					g.set(100)
				}
				return
			case <-t.C:
				g.step()
			}
		}
	}()
}
