package fsm

import (
	"fmt"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// BenchmarkAdmissionLimits measures one admission (hold, earliest fit on
// cpu) and its abort with 100k live reservations of one tenant, without
// limits and with a max_units and a max_unit_millis limit that never
// refuse (so every admission runs both checks in full). The window
// length decides how many of the tenant's usage steps a check reads.
func BenchmarkAdmissionLimits(b *testing.B) {
	const live = 100_000
	for _, tc := range []struct {
		name   string
		window int64
	}{{"limits=off", 0}, {"limits=on/window=1s", 1_000}, {"limits=on/window=100s", 100_000}} {
		b.Run(fmt.Sprintf("live=%d/%s", live, tc.name), func(b *testing.B) {
			f, idx := loaded(b, live)
			if tc.window > 0 {
				h := &harness{t: b, f: f, index: idx - 1}
				h.must(0, OK, setLimits("alice", "*", &fsmv1.LimitSpec{MaxUnits: 1 << 40, MaxUnitMillis: 1 << 60, WindowMillis: tc.window}))
				idx = h.index + 1
			}
			holdAbortLoop(b, f, idx)
		})
	}
}

// BenchmarkAdmissionLimitsUsageBuild is BenchmarkAdmissionLimits with
// the usage built two ways: in bulk (usageBuilder, what SetLimits and
// restore do) and by one add per row (how it was built before). The two
// give the same step functions in B-trees of different shape (bulk
// inserts ascend); an admission must not cost more on either.
func BenchmarkAdmissionLimitsUsageBuild(b *testing.B) {
	const live = 100_000
	for _, build := range []string{"bulk", "incremental"} {
		b.Run(fmt.Sprintf("live=%d/usage=%s", live, build), func(b *testing.B) {
			f, idx := loaded(b, live)
			h := &harness{t: b, f: f, index: idx - 1}
			h.must(0, OK, setLimits("alice", "*", &fsmv1.LimitSpec{MaxUnits: 1 << 40, MaxUnitMillis: 1 << 60, WindowMillis: 1_000}))
			idx = h.index + 1
			if build == "incremental" {
				s := f.st
				s.lim.use, s.lim.hitOK = make(map[limitKey]*usage), false
				var sc rowScan
				s.byID.Ascend(func(row string) bool {
					if err := scanRow(row, &sc); err != nil {
						b.Fatal(err)
					}
					s.lim.account(sc.owner, &sc.rowMeta, sc.parts, sc.pendParts, 1)
					return true
				})
			}
			holdAbortLoop(b, f, idx)
		})
	}
}
