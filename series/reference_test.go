package series

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// refInstant is an obviously-correct, slow resolver for the reference
// model: it tries every minute within 15 hours of the wall time w (read
// as UTC) and keeps those whose local clock in loc shows w; the first
// wins. If none does (a gap), it finds the minute at which the local clock
// passes w and reads w with the offset in force just before it.
func refInstant(w time.Time, loc *time.Location) int64 {
	wall := w.Unix()
	for u := wall - 15*3600; u <= wall+15*3600; u += 60 {
		if civilOf(time.Unix(u, 0).In(loc)).floating().Unix() == wall {
			return u * 1000
		}
	}
	for u := wall - 15*3600; u <= wall+15*3600; u += 60 {
		if civilOf(time.Unix(u, 0).In(loc)).floating().Unix() > wall {
			_, before := time.Unix(u-60, 0).In(loc).Zone()
			return (wall - int64(before)) * 1000
		}
	}
	panic("no instant for " + w.String())
}

// TestExpandAgainstReferenceModel compares Expand with a brute-force
// model on weekly rules (some weekdays at one time of day) in zones with
// unusual transitions: 30-minute DST (Lord_Howe), negative DST (Dublin),
// DST at midnight (Havana, Santiago), a 45-minute offset (Chatham), and
// the two zones of the issue. Times of day are drawn to hit the gaps and
// overlaps often. Each case prints its seed.
func TestExpandAgainstReferenceModel(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Europe/Dublin", "America/Havana", "America/Santiago", "Pacific/Chatham", "Asia/Tehran"}
	days := []string{"MO", "TU", "WE", "TH", "FR", "SA", "SU"}
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		zone := zones[rng.IntN(len(zones))]
		loc, err := LoadZone(zone)
		if err != nil {
			t.Fatal(err)
		}
		var byday []string
		want := map[time.Weekday]bool{}
		for i, d := range days {
			if rng.IntN(3) == 0 {
				byday = append(byday, d)
				want[time.Weekday((i+1)%7)] = true
			}
		}
		if len(byday) == 0 {
			byday, want[time.Monday] = []string{"MO"}, true
		}
		hours := []int{0, 1, 2, 3, 23, rng.IntN(24)}
		h, m := hours[rng.IntN(len(hours))], 15*rng.IntN(4)
		rule := fmt.Sprintf("FREQ=WEEKLY;BYDAY=%s;BYHOUR=%d;BYMINUTE=%d", strings.Join(byday, ","), h, m)
		r, err := parseRule(rule)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		first := time.Date(2005+rng.IntN(20), time.Month(1+rng.IntN(12)), 1, 0, 0, 0, 0, time.UTC)
		lim := goldenLimits
		s, err := Compile(Spec{Rule: r.String(), Zone: zone, Start: civilOf(first).String(), Duration: 60_000, Horizon: 3_600_000}, lim)
		if err != nil {
			t.Fatalf("seed %d %s: %v", seed, rule, err)
		}
		// The model: every listed weekday at h:m local, for 400 days.
		var ref []int64
		for d := first; d.Before(first.AddDate(0, 0, 400)); d = d.AddDate(0, 0, 1) {
			if want[d.Weekday()] {
				ref = append(ref, refInstant(time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, time.UTC), loc))
			}
		}
		from, to := ref[0], ref[len(ref)-1]+1
		var inWindow []int64
		for _, v := range ref {
			if v >= from && v < to {
				inWindow = append(inWindow, v)
			}
		}
		got := s.Expand(from, to)
		if !equalInt64s(got, inWindow) {
			for i := range min(len(got), len(inWindow)) {
				if got[i] != inWindow[i] {
					t.Fatalf("seed %d %s in %s: occurrence %d is %s, the model says %s", seed, rule, zone, i,
						time.UnixMilli(got[i]).In(loc).Format(time.RFC3339), time.UnixMilli(inWindow[i]).In(loc).Format(time.RFC3339))
				}
			}
			t.Fatalf("seed %d %s in %s: %d occurrences, the model has %d", seed, rule, zone, len(got), len(inWindow))
		}
	}
}
