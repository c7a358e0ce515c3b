package jepsen

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// InvariantOptions tunes CheckInvariants.
type InvariantOptions struct {
	// Now is when the lists were read (holds are judged against it).
	Now time.Time
	// ExpiryInterval is the ledger's hold-expiry tick; a hold may outlive
	// its TTL by at most this much. Default 1s.
	ExpiryInterval time.Duration
	// MaxViolations caps the examples kept per invariant. Default 10.
	MaxViolations int
}

// InvariantResult is the verdict on one end-of-run invariant.
type InvariantResult struct {
	Name       string   `json:"name"`
	OK         bool     `json:"ok"`
	Checked    int      `json:"checked"` // how many items were examined
	Violations []string `json:"violations,omitempty"`
	// Excused counts the items the check could not judge and why (the
	// faults made them legitimately different), so that a run that
	// excuses many says so.
	Excused    int    `json:"excused,omitempty"`
	ExcusedWhy string `json:"excused_why,omitempty"`
}

type invCollector struct {
	res InvariantResult
	max int
	n   int
}

func (c *invCollector) fail(format string, args ...any) {
	c.n++
	c.res.OK = false
	if len(c.res.Violations) < c.max {
		c.res.Violations = append(c.res.Violations, fmt.Sprintf(format, args...))
	}
}

func (c *invCollector) done() InvariantResult {
	if c.n > len(c.res.Violations) {
		c.res.Violations = append(c.res.Violations, fmt.Sprintf("... and %d more", c.n-len(c.res.Violations)))
	}
	return c.res
}

// CheckInvariants verifies the end-of-run invariants on the reservation
// lists read from every node (by node name) after the cluster healed:
//
//   - no-overbooking: on every node, for every resource and instant, the
//     held, committed and pending amounts never exceed capacity;
//   - replicas-identical: every node holds exactly the same reservations;
//   - acked-writes-durable: every acknowledged hold/reserve exists on every
//     node, and every acknowledged commit or reserve is still committed
//     (or cancelled, if a cancel was issued for it);
//   - holds-expire: no hold or pending modification outlived its TTL by
//     more than one expiry interval;
//   - exactly-once: no workload ID (idempotency key) produced more than one
//     reservation on any node.
func CheckInvariants(h History, lists map[string][]Reservation, opt InvariantOptions) []InvariantResult {
	if opt.ExpiryInterval <= 0 {
		opt.ExpiryInterval = time.Second
	}
	if opt.MaxViolations <= 0 {
		opt.MaxViolations = 10
	}
	nodes := slices.Sorted(maps.Keys(lists))
	newC := func(name string) *invCollector {
		return &invCollector{res: InvariantResult{Name: name, OK: true}, max: opt.MaxViolations}
	}

	over := newC("no-overbooking")
	for _, n := range nodes {
		for _, res := range slices.Sorted(maps.Keys(h.Capacity)) {
			over.res.Checked++
			if t, used, ok := peakOver(lists[n], res, h.Capacity[res]); !ok {
				over.fail("%s: %s uses %d > capacity %d at %d", n, res, used, h.Capacity[res], t)
			}
		}
	}

	same := newC("replicas-identical")
	if len(nodes) > 1 {
		ref := canonical(lists[nodes[0]])
		for _, n := range nodes[1:] {
			same.res.Checked++
			got := canonical(lists[n])
			if d := firstDiff(ref, got); d != "" {
				same.fail("%s vs %s: %s", nodes[0], n, d)
			}
		}
	}

	durable := newC("acked-writes-durable")
	acked := map[string]bool{}     // created (hold/reserve ok)
	committed := map[string]bool{} // reserve ok or commit ok
	cancelTried := map[string]bool{}
	abortTried := map[string]bool{}
	for _, op := range h.Ops {
		switch {
		case op.Output.Code == CodeFailed:
		case op.Input.Op == OpCancel:
			cancelTried[op.Input.ID] = true
		case op.Input.Op == OpAbort:
			abortTried[op.Input.ID] = true
		case op.Output.Code != CodeOK:
		case op.Input.Op == OpHold:
			acked[op.Input.ID] = true
		case op.Input.Op == OpReserve:
			acked[op.Input.ID], committed[op.Input.ID] = true, true
		case op.Input.Op == OpCommit:
			committed[op.Input.ID] = true
		}
	}
	for _, n := range nodes {
		byID := map[string]Reservation{}
		for _, r := range lists[n] {
			if r.ID != "" {
				byID[r.ID] = r
			}
		}
		for _, id := range slices.Sorted(maps.Keys(acked)) {
			durable.res.Checked++
			r, ok := byID[id]
			if !ok {
				// With drops, one that may have ended (cancelled,
				// aborted, or a hold never committed, which may have
				// expired) may be gone; a commit never cancelled may not.
				if h.EndedDrops && (cancelTried[id] || abortTried[id] || !committed[id]) {
					continue
				}
				durable.fail("%s: acknowledged %s missing", n, id)
				continue
			}
			if committed[id] {
				switch {
				case r.Status == StatusCommitted || r.Status == StatusActive || r.Status == StatusCompleted:
				case r.Status == StatusCancelled && cancelTried[id]:
				default:
					durable.fail("%s: acknowledged commit of %s but status %s", n, id, r.Status)
				}
			}
		}
	}

	holds := newC("holds-expire")
	limit := opt.Now.Add(-opt.ExpiryInterval).UnixMilli()
	for _, n := range nodes {
		for _, r := range lists[n] {
			if r.Status == StatusHeld {
				holds.res.Checked++
				if r.HoldExpiresAt < limit {
					holds.fail("%s: %s still HELD %s after its TTL", n, r.ServerID, time.Duration(opt.Now.UnixMilli()-r.HoldExpiresAt)*time.Millisecond)
				}
			}
			if r.Pending != nil && r.Pending.HoldExpiresAt != 0 {
				holds.res.Checked++
				if r.Pending.HoldExpiresAt < limit {
					holds.fail("%s: %s pending modification outlived its TTL", n, r.ServerID)
				}
			}
		}
	}

	once := newC("exactly-once")
	for _, n := range nodes {
		count := map[string]int{}
		for _, r := range lists[n] {
			if r.ID != "" {
				count[r.ID]++
			}
		}
		for _, id := range slices.Sorted(maps.Keys(count)) {
			once.res.Checked++
			if count[id] > 1 {
				once.fail("%s: key %s produced %d reservations", n, id, count[id])
			}
		}
	}
	return []InvariantResult{over.done(), same.done(), durable.done(), holds.done(), once.done()}
}

// live reports whether a reservation occupies capacity.
func live(s Status) bool {
	return s == StatusHeld || s == StatusCommitted || s == StatusActive
}

// peakOver finds an instant at which resource res is used beyond capacity.
func peakOver(list []Reservation, res string, capacity int64) (at, used int64, ok bool) {
	type ev struct{ t, d int64 }
	var evs []ev
	add := func(parts []Part, s, e int64) {
		for _, p := range parts {
			if p.Resource == res {
				evs = append(evs, ev{s, p.Amount}, ev{e, -p.Amount})
			}
		}
	}
	for _, r := range list {
		if !live(r.Status) {
			continue
		}
		add(r.Parts, r.Start, r.End)
		if r.Pending != nil {
			add(r.Pending.Parts, r.Pending.Start, r.Pending.End)
		}
	}
	// Releases before bookings at the same instant: intervals are half-open.
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].d < evs[j].d
	})
	var cur int64
	for _, e := range evs {
		cur += e.d
		if cur > capacity {
			return e.t, cur, false
		}
	}
	return 0, 0, true
}

// canonical renders a list in a comparable, order-independent form.
func canonical(list []Reservation) []string {
	out := make([]string, 0, len(list))
	for _, r := range list {
		s := fmt.Sprintf("%s key=%s %s [%d,%d) %v", r.ServerID, r.ID, r.Status, r.Start, r.End, r.Parts)
		if r.Pending != nil {
			s += fmt.Sprintf(" pending [%d,%d) %v", r.Pending.Start, r.Pending.End, r.Pending.Parts)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		switch {
		case i >= len(a):
			return fmt.Sprintf("extra %q", b[i])
		case i >= len(b):
			return fmt.Sprintf("missing %q", a[i])
		case a[i] != b[i]:
			return fmt.Sprintf("%q != %q", a[i], b[i])
		}
	}
	return ""
}
