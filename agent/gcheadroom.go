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

// gcHeadroomPoll is how often the live heap is read. A node holding a
// million reservations collects every few seconds under load; between
// polls its setting is at most one cycle late.
const gcHeadroomPoll = 500 * time.Millisecond

// gcPercentFor returns the GOGC that lets a heap of live bytes grow by
// headroom before the next collection: 100 (the runtime's default) while
// the live heap is at most headroom, then 100*headroom/live, never below
// gcHeadroomMinPercent.
//
// With GOGC 100 the heap doubles between collections, so a node's resident
// memory is about twice its live data: 1 GiB for a million reservations
// (benchmarks/results/recovery-1m/round10-rowtable). Nodes whose ledger is
// small keep the default and its CPU; large ones trade collector CPU and
// tail latency for memory: at 1M reservations a headroom of 256 MiB held
// the node at 877-927 MiB at its peak under load instead of 1,018-1,029
// MiB, for about a tenth more CPU per operation and a p99 13-44 % higher,
// which is why it is off unless configured.
func gcPercentFor(live, headroom uint64) int {
	if headroom == 0 || live <= headroom {
		return 100
	}
	return max(gcHeadroomMinPercent, int(100*headroom/live))
}

// gcHeadroom keeps GOGC at gcPercentFor of the live heap, as measured by
// the last collection.
type gcHeadroom struct {
	headroom uint64
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
// the last one by 5 or more (or is back at 100): small moves of the live
// heap do not change the setting at every poll.
func (g *gcHeadroom) step() {
	live := g.read()
	p := gcPercentFor(live, g.headroom)
	if p == g.percent || (p != 100 && abs(p-g.percent) < 5) {
		return
	}
	g.set(p)
	if g.log != nil {
		g.log.Debug("GOGC set for the collector's headroom", "gogc", p, "previous", g.percent, "live_bytes", live)
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

// keepGCHeadroom runs the gc_headroom policy until ctx ends: it polls the
// live heap and sets GOGC (through the cluster, which holds the collector
// off during a snapshot restore and puts the setting back after it), and
// puts back GOGC 100 when it ends. It does nothing when gc_headroom is 0
// or GOGC is set in the environment, which then decides.
func (a *Agent) keepGCHeadroom(ctx context.Context) {
	if a.cfg.GCHeadroom <= 0 {
		return
	}
	if v, ok := os.LookupEnv("GOGC"); ok {
		a.log.Info("gc_headroom not applied: GOGC is set in the environment", "GOGC", v)
		return
	}
	g := &gcHeadroom{headroom: uint64(a.cfg.GCHeadroom), read: liveHeap, set: cluster.SetGCPercent, percent: 100, log: a.log}
	go func() {
		t := time.NewTicker(gcHeadroomPoll)
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
