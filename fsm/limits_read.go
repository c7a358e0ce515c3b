package fsm

import (
	"cmp"
	"maps"
	"math"
	"slices"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Limits returns the tenant limit table sorted by (tenant, resource). The
// records are shared and must not be changed.
func (f *FSM) Limits() []*fsmv1.TenantLimit {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var msg fsmv1.Snapshot
	f.st.captureLimits(&msg)
	return msg.GetLimits()
}

// EffectiveLimit returns the limit entry that applies to tenant on
// resource (the most specific one), or nil.
func (f *FSM) EffectiveLimit(tenant, resource string) *fsmv1.TenantLimit {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.lim.spec(tenant, resource)
}

// UsageRow is one tenant's usage of one resource over a report period, in
// unit-milliseconds of reservation time inside the period.
type UsageRow struct {
	Tenant, Resource string
	// Booked is committed, running and completed reservations (as far
	// as they ran, for those completed early).
	Booked int64
	// Held is live holds and requests pending approval.
	Held int64
	// ReleasedEarly is what early completions gave back: from the
	// actual end to the booked end.
	ReleasedEarly int64
	// Expired is holds and pending requests that expired unanswered.
	Expired int64
	// Cancelled is committed reservations cancelled, and denied requests.
	Cancelled int64
	// Reservations is the number of rows that contributed.
	Reservations int
	// Saturated is set when a sum reached the int64 maximum and stopped
	// there: the true figure is larger.
	Saturated bool
}

// Usage reports, per tenant and resource, the unit-time of the retained
// reservations inside [from, to) (to 0: unbounded), filtered by tenant
// and resource when those are not empty. It reads the reservation table
// as it stands: terminal rows are kept for Config.Retention after their
// last change, so a period further back than that is incomplete. A read
// scans the table once; it is not on any admission path. Sums saturate at
// the int64 maximum, and a row that holds one says so (Saturated).
func (f *FSM) Usage(from, to int64, tenant, resource string) []UsageRow {
	if to == 0 {
		to = MaxTimeMillis + 1
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	rows := map[limitKey]*UsageRow{}
	var sc rowScan
	f.st.byID.Ascend(func(raw string) bool {
		if err := scanRow(raw, &sc); err != nil || (tenant != "" && sc.owner != tenant) {
			return true
		}
		var r *fsmv1.Reservation
		for _, p := range sc.parts {
			if resource != "" && p.resource != resource {
				continue
			}
			k := limitKey{sc.owner, p.resource}
			u := rows[k]
			if u == nil {
				u = &UsageRow{Tenant: k.tenant, Resource: k.resource}
				rows[k] = u
			}
			area := func(s, e int64) int64 { return mulSat(p.amount, overlap(s, e, from, to)) }
			booked := area(sc.start, sc.end)
			switch st := sc.state; st {
			case fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_STATE_ACTIVE, fsmv1.Reservation_STATE_DEGRADED,
				fsmv1.Reservation_STATE_COMPLETED:
				u.Booked = addSat(u.Booked, booked)
				if st == fsmv1.Reservation_STATE_COMPLETED || st == fsmv1.Reservation_STATE_ACTIVE || st == fsmv1.Reservation_STATE_COMMITTED {
					if r == nil {
						r = decodeRow(raw)
					}
					if req := r.GetRequestedDurationMillis(); req > 0 {
						u.ReleasedEarly = addSat(u.ReleasedEarly, area(sc.end, addSat(sc.start, req)))
					}
				}
			case fsmv1.Reservation_STATE_HELD, fsmv1.Reservation_STATE_PENDING_APPROVAL:
				u.Held = addSat(u.Held, booked)
			case fsmv1.Reservation_STATE_EXPIRED:
				u.Expired = addSat(u.Expired, booked)
			case fsmv1.Reservation_STATE_CANCELLED, fsmv1.Reservation_STATE_DENIED:
				u.Cancelled = addSat(u.Cancelled, booked)
			default:
				continue
			}
			u.Reservations++
		}
		return true
	})
	keys := slices.SortedFunc(maps.Keys(rows), func(a, b limitKey) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.resource, b.resource))
	})
	out := make([]UsageRow, 0, len(keys))
	for _, k := range keys {
		u := rows[k]
		u.Saturated = slices.Contains([]int64{u.Booked, u.Held, u.ReleasedEarly, u.Expired, u.Cancelled}, math.MaxInt64)
		out = append(out, *u)
	}
	return out
}

// mulSat returns a*b for a, b >= 0, saturating at the int64 maximum.
func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}
