package planner

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// churnLag is how many admissions a booking of BenchmarkAdmissionChurn
// stays live before it is removed.
const churnLag = 1024

// BenchmarkAdmissionChurn is BenchmarkAdmission without its cycled
// stream of 4096 requests, whose Remove leaves the timeline at the very
// place the same request books again one cycle later. Here every request
// is drawn afresh (seeded), and each step removes the booking admitted
// churnLag steps earlier, then admits a new one (Find, Book): removals
// and bookings happen at unrelated places, as in a ledger whose bookings
// end long after they were made. The fixture holds n + churnLag live
// bookings while it runs and is restored after.
func BenchmarkAdmissionChurn(b *testing.B) {
	for _, live := range benchLive {
		if live.n < 100_000 {
			continue
		}
		b.Run("live="+live.name, func(b *testing.B) {
			_, ix := fixtures(b, live.n)
			p := ix.p
			ids := make([]string, churnLag)
			for k := range ids {
				ids[k] = "churn-" + strconv.Itoa(k)
			}
			held := make([]bool, churnLag)
			rng := rand.New(rand.NewPCG(benchReqSeed, 3))
			spread := int64(live.n) * benchSpread
			parts := make([]Part, 1)
			b.ReportAllocs()
			i := 0
			cpu := startCPU()
			for b.Loop() {
				k := i % churnLag
				i++
				if held[k] {
					if err := p.Remove(ids[k]); err != nil {
						b.Fatal(err)
					}
				}
				r := benchReq{amount: 1 + rng.Int64N(benchMaxAmount), duration: 1 + rng.Int64N(benchMaxDur), notBefore: rng.Int64N(spread)}
				d, err := p.Find(r.request(parts))
				if err != nil || !d.Fits {
					b.Fatalf("find %+v: %+v, %v", r, d, err)
				}
				if err := p.Book(Booking{ID: ids[k], Parts: parts, Start: d.Start, End: d.Start + r.duration}); err != nil {
					b.Fatal(err)
				}
				held[k] = true
			}
			cpu.stop(b)
			for k, h := range held {
				if h {
					if err := p.Remove(ids[k]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
