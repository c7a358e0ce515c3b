package series

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// randomRule draws a valid endless rule of any frequency with a few BYxxx
// parts, for the equivalence test below.
func randomRule(rng *rand.Rand) string {
	freqs := []string{"YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY"}
	f := freqs[rng.IntN(len(freqs))]
	parts := []string{"FREQ=" + f}
	if rng.IntN(2) == 0 {
		parts = append(parts, fmt.Sprintf("INTERVAL=%d", 1+rng.IntN(5)))
	}
	pick := func(n, lo, hi int, signed bool) string {
		var vs []string
		for range 1 + rng.IntN(n) {
			v := lo + rng.IntN(hi-lo+1)
			if signed && rng.IntN(3) == 0 {
				v = -v
			}
			vs = append(vs, fmt.Sprint(v))
		}
		return strings.Join(vs, ",")
	}
	days := []string{"MO", "TU", "WE", "TH", "FR", "SA", "SU"}
	switch f {
	case "YEARLY":
		switch rng.IntN(5) {
		case 0:
			parts = append(parts, "BYMONTH="+pick(3, 1, 12, false))
		case 1:
			parts = append(parts, "BYYEARDAY="+pick(3, 1, 365, true))
		case 2:
			parts = append(parts, "BYWEEKNO="+pick(2, 1, 52, true), "BYDAY="+days[rng.IntN(7)])
		case 3:
			parts = append(parts, "BYMONTH="+pick(2, 1, 12, false), "BYDAY="+fmt.Sprint(1+rng.IntN(4))+days[rng.IntN(7)])
		}
	case "MONTHLY":
		switch rng.IntN(4) {
		case 0:
			parts = append(parts, "BYMONTHDAY="+pick(3, 1, 28, true))
		case 1:
			parts = append(parts, "BYDAY="+days[rng.IntN(7)]+","+days[rng.IntN(7)], "BYSETPOS="+pick(1, 1, 3, true))
		case 2:
			parts = append(parts, "BYDAY=-1"+days[rng.IntN(7)])
		}
	case "WEEKLY":
		if rng.IntN(2) == 0 {
			parts = append(parts, "BYDAY="+days[rng.IntN(7)]+","+days[rng.IntN(7)])
		}
		if rng.IntN(3) == 0 {
			parts = append(parts, "WKST="+days[rng.IntN(7)])
		}
	case "DAILY":
		if rng.IntN(2) == 0 {
			parts = append(parts, "BYDAY="+days[rng.IntN(7)])
		}
	case "HOURLY":
		if rng.IntN(2) == 0 {
			parts = append(parts, "BYHOUR="+pick(3, 0, 23, false))
		}
	case "MINUTELY":
		parts = []string{"FREQ=MINUTELY", fmt.Sprintf("INTERVAL=%d", 60+15*rng.IntN(8))}
	}
	if f != "HOURLY" && f != "MINUTELY" && rng.IntN(2) == 0 {
		parts = append(parts, "BYHOUR="+pick(2, 0, 23, false))
	}
	return strings.Join(parts, ";")
}

// TestRebasedIteratorMatchesFullWalk: skipping whole periods ahead
// (iteratorFrom) yields exactly the occurrences a walk from DTSTART
// yields, for random rules (with COUNT and not_before too), zones, starts
// and windows.
func TestRebasedIteratorMatchesFullWalk(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"}
	lim := goldenLimits
	lim.MaxPerExpansion = 200
	tried := 0
	for seed := uint64(1); tried < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		text := randomRule(rng)
		counted := rng.IntN(4) == 0
		if counted {
			text += fmt.Sprintf(";COUNT=%d", 1+rng.IntN(100))
		}
		r, err := parseRule(text)
		if err != nil {
			continue
		}
		start := time.Date(2000+rng.IntN(20), time.Month(1+rng.IntN(12)), 1+rng.IntN(31), rng.IntN(24), 15*rng.IntN(4), 0, 0, time.UTC)
		spec := Spec{Rule: r.String(), Zone: zones[rng.IntN(len(zones))], Start: civilOf(start).String(), Duration: 60_000, Horizon: 3_600_000}
		if counted {
			spec.Horizon = 0
		}
		if rng.IntN(3) == 0 {
			spec.NotBefore = start.UnixMilli() + rng.Int64N(3*365*86_400_000)
		}
		fast, err := Compile(spec, lim)
		if err != nil {
			continue // e.g. a rule with no occurrence, or starts too close
		}
		tried++
		slow := *fast
		slow.fullWalk = true
		from := start.UnixMilli() + rng.Int64N(10*365*86_400_000)
		to := from + rng.Int64N(2*365*86_400_000)
		if counted {
			from, to = 0, maxInt64
		}
		if a, b := fast.Occurrences(from, to), slow.Occurrences(from, to); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("seed %d %s from %s: rebased walk differs\nfast %v\nslow %v", seed, spec, time.UnixMilli(from).UTC(), a, b)
		}
		through := wallKey(from, fast.Location())
		if a, b := fast.Next(through, from, 0), slow.Next(through, from, 0); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("seed %d %s: Next differs\nfast %v\nslow %v", seed, spec, a, b)
		}
	}
}
