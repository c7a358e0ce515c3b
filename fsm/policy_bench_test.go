package fsm

import (
	"fmt"
	"testing"
)

// BenchmarkApplyScheduledHoldAbort is BenchmarkApplyHoldAbort on a
// MOVE_VARIABLE resource whose live reservations are all scheduler items
// (plus a tenth as many waiting variable jobs): it shows what the
// scheduler's per-resource scans cost next to the plain path.
func BenchmarkApplyScheduledHoldAbort(b *testing.B) {
	for _, live := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			h := newHarness(b, Config{})
			h.must(0, OK, createPolicyRes("cpu", 128, spec(MOVE, 0, 0)))
			for i := range live {
				h.must(0, OK, reserve(fmt.Sprintf("job-%07d", i), "cpu", int64(1+i%64), int64(10+i%50), withWindow(int64(i*7), 0)))
				if i%10 == 0 {
					h.must(0, OK, submitJob(fmt.Sprintf("var-%07d", i), "cpu", 8, 100, int64(i*7)))
				}
			}
			holdAbortLoop(b, h.f, h.index+1)
		})
	}
}

// BenchmarkApplyHoldAbortBesideJobs is BenchmarkApplyHoldAbort on a plain
// resource while another resource carries waiting variable jobs: the
// scheduler's per-entry overhead on the plain path.
func BenchmarkApplyHoldAbortBesideJobs(b *testing.B) {
	for _, jobs := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			h := newHarness(b, Config{})
			h.must(0, OK, createRes("cpu", 128))
			h.must(0, OK, createRes("batch", 4))
			for i := range jobs {
				h.must(0, OK, submitJob(fmt.Sprintf("var-%07d", i), "batch", 4, 100, 1_000_000))
			}
			holdAbortLoop(b, h.f, h.index+1)
		})
	}
}

// BenchmarkApplyCoReserveCancel books a co-reservation of two
// sub-requests over candidates a and b beside live scheduler items on
// both (a is full over the window, so both sub-requests land on b), then
// cancels both sub-reservations: three entries per op, to set against
// BenchmarkApplyScheduledHoldAbort's two.
func BenchmarkApplyCoReserveCancel(b *testing.B) {
	for _, live := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			h := newHarness(b, Config{})
			h.must(0, OK, createPolicyRes("a", 128, spec(MOVE, 0, 0)))
			h.must(0, OK, createPolicyRes("b", 128, spec(MOVE, 0, 0)))
			for i := range live {
				res := []string{"a", "b"}[i%2]
				h.must(0, OK, reserve(fmt.Sprintf("job-%07d", i), res, int64(1+i%64), int64(10+i%50), withWindow(int64(1000+i*7), 0)))
			}
			h.must(0, OK, reserve("full", "a", 128, 100, withStart(0)))
			idx := h.index + 1
			co := encodeAt(b, coReserve("", 0, []string{"a", "b"}, coSub(64, 10, 40), coSub(64, 10, 40)), 0)
			b.ReportAllocs()
			for b.Loop() {
				res, err := DecodeResult(h.f.ApplyCommand(idx, co))
				if err != nil || res.GetStatus() != OK || len(res.GetCoAdmission().GetPlacements()) != 2 {
					b.Fatalf("co-reserve: %v %v", res, err)
				}
				for i := range 2 {
					h.f.ApplyCommand(idx+1+uint64(i), encodeAt(b, cancel(coSubID(AutoID(idx), i)), 0))
				}
				idx += 3
			}
			b.ReportMetric(3, "entries/op")
		})
	}
}
