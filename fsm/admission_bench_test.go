package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// admissionChunk is the number of reservations a BenchmarkApplyAdmissions
// iteration takes through their lifecycle: as many as one group entry of
// the service's coalescing client typically carries.
const admissionChunk = 64

// admissionFlows are the lifecycles BenchmarkApplyAdmissions drives: the
// commands of reservation n, in order, each keyed as the API's clients
// key them. Log time stays 0 (the commands are stamped 0), as in
// BenchmarkApplyHoldCommitCancel: a hold or reserve for "now" is ACTIVE
// at once, one in the future stays COMMITTED and can be modified.
var admissionFlows = []struct {
	name  string
	steps func(n int) []*fsmv1.Command
}{
	{"hold-commit-cancel", func(n int) []*fsmv1.Command {
		id, key := fmt.Sprintf("adm-%d", n), fmt.Sprintf("adm-key-%d", n)
		return []*fsmv1.Command{
			hold(id, "cpu", 32, 40, withKey(key+"h"), withTTL(10_000)),
			commit(id, withKey(key+"c")),
			cancel(id, withKey(key+"x")),
		}
	}},
	{"hold-abort", func(n int) []*fsmv1.Command {
		id, key := fmt.Sprintf("adm-%d", n), fmt.Sprintf("adm-key-%d", n)
		return []*fsmv1.Command{
			hold(id, "cpu", 32, 40, withKey(key+"h"), withTTL(10_000)),
			abort(id, withKey(key+"a")),
		}
	}},
	{"reserve-modify-commit-cancel", func(n int) []*fsmv1.Command {
		id, key := fmt.Sprintf("adm-%d", n), fmt.Sprintf("adm-key-%d", n)
		// Each reservation at its own instant, so that all of a chunk
		// fit, before and after the move.
		at := int64(1_000_000_000 + 100*n)
		m := modify(id, nil, ptr(at+1_000_000_000), nil)
		m.IdempotencyKey = key + "m"
		return []*fsmv1.Command{
			reserve(id, "cpu", 8, 40, withWindow(at, 0), withKey(key+"r")),
			m,
			commit(id, withKey(key+"c")),
			cancel(id, withKey(key+"x")),
		}
	}},
}

// BenchmarkApplyAdmissions measures the state machine alone per
// admission: the commands are encoded and stamped with the timer
// stopped, then applied through ApplyBatch as raft hands them over, on a
// table of 10,000 live reservations. Each iteration takes admissionChunk
// reservations through one lifecycle, step by step: alone, one log entry
// per command (group=false), or each step of the 64 as one group entry
// (group=true). ns/op and the allocations are per iteration; ns/admission
// divides by the reservations, and cpu-ns/admission is the process's CPU
// time over the applies alone (getrusage around each ApplyBatch). Every
// result is checked, outside the timer.
func BenchmarkApplyAdmissions(b *testing.B) {
	for _, flow := range admissionFlows {
		for _, grouped := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/group=%t", flow.name, grouped), func(b *testing.B) {
				f, idx := loaded(b, 10_000)
				n := 0
				var cpu time.Duration
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					// steps[k] are the entries of lifecycle step k.
					var steps [][][]byte
					for i := range admissionChunk {
						for k, c := range flow.steps(n + i) {
							if k == len(steps) {
								steps = append(steps, nil)
							}
							steps[k] = append(steps[k], stamped(b, 0, c))
						}
					}
					n += admissionChunk
					var outs [][]any
					for _, step := range steps {
						cmds := step
						if grouped {
							entry, m := GroupCommands(step)
							if m != len(step) {
								b.Fatalf("grouped %d of %d", m, len(step))
							}
							cmds = [][]byte{entry}
						}
						logs := make([]*raft.Log, len(cmds))
						for i, c := range cmds {
							logs[i] = &raft.Log{Index: idx, Type: raft.LogCommand, Data: c}
							idx++
						}
						b.StartTimer()
						c0 := cpuTime()
						out := f.ApplyBatch(logs)
						cpu += cpuTime() - c0
						b.StopTimer()
						outs = append(outs, out)
					}
					for _, out := range outs {
						if grouped {
							out = out[0].([]any)
						}
						for _, o := range out {
							if r, err := DecodeResult(o.(*Applied).EncodedResult()); err != nil || r.GetStatus() != OK {
								b.Fatalf("%s: result %v, %v", flow.name, r, err)
							}
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*admissionChunk), "ns/admission")
				// On a shared machine the process's CPU time while it
				// applies (all threads, the collector's included) is
				// steadier than the wall time.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*admissionChunk), "cpu-ns/admission")
			})
		}
	}
}
