package replicated

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"google.golang.org/protobuf/types/known/durationpb"
)

var _ ledger.Tenancy = (*Ledger)(nil)

// msPerHour converts unit-hours (the API's) to unit-milliseconds (the
// log's).
const msPerHour = 3_600_000

// SetLimits implements ledger.Tenancy.
func (l *Ledger) SetLimits(ctx context.Context, a ledger.LimitsArgs) (*ledgerdv1.TenantLimit, error) {
	cmd := envelope(fsmv1.Command_TYPE_SET_LIMITS, a.Write)
	cmd.Payload = &fsmv1.Command_SetLimits{SetLimits: setLimits(a.Tenant, a.Resource, a.Spec)}
	res, err := l.apply(ctx, "set limits", cmd)
	if err != nil {
		return nil, err
	}
	return limitToAPI(res.GetLimit()), nil
}

// setLimits is the SetLimits command's payload for tenant's limits spec
// on resource (nil spec: clear the entry).
func setLimits(tenant, resource string, sp *ledger.LimitSpec) *fsmv1.SetLimits {
	sl := &fsmv1.SetLimits{Tenant: tenant, Resource: resource}
	if sp != nil {
		sl.Spec = &fsmv1.LimitSpec{
			MaxUnits: sp.MaxUnits, MaxUnitMillis: sp.MaxUnitMillis, WindowMillis: sp.Window,
			MaxAheadMillis: sp.MaxAhead, MaxDurationMillis: sp.MaxDuration, MaxHoldTtlMillis: sp.MaxHoldTTL,
			ApprovalRequired: sp.ApprovalRequired, ApprovalAboveUnits: sp.ApprovalAboveUnits,
			ApprovalAboveDurationMillis: sp.ApprovalAboveDuration, ApprovalTtlMillis: sp.ApprovalTTL,
		}
	}
	return sl
}

// CheckLimits checks tenant's limits spec on resource as the state
// machine will when SetLimits proposes it (fsm.CheckSetLimits), without
// proposing anything: a config file's limits are checked at start, not
// when a leader seeds them.
func CheckLimits(tenant, resource string, sp *ledger.LimitSpec) error {
	return fsm.CheckSetLimits(setLimits(tenant, resource, sp))
}

// Limits implements ledger.Tenancy.
func (l *Ledger) Limits(ctx context.Context, tenant, resource string, stale bool) ([]*ledgerdv1.TenantLimit, *ledgerdv1.TenantLimit, error) {
	if err := l.barrier(ctx, "limits", stale); err != nil {
		return nil, nil, err
	}
	var out []*ledgerdv1.TenantLimit
	for _, e := range l.fsm.Limits() {
		if tenant == "" || e.GetTenant() == tenant || e.GetTenant() == fsm.AnyTenant {
			out = append(out, limitToAPI(e))
		}
	}
	var eff *ledgerdv1.TenantLimit
	if tenant != "" && resource != "" {
		eff = limitToAPI(l.fsm.EffectiveLimit(tenant, resource))
	}
	return out, eff, nil
}

// Usage implements ledger.Tenancy.
func (l *Ledger) Usage(ctx context.Context, q ledger.UsageQuery) ([]*ledgerdv1.UsageRow, error) {
	if q.To != 0 && q.To <= q.From {
		return nil, &ledger.FieldError{Field: "to", Reason: "must be after from"}
	}
	if err := l.barrier(ctx, "usage", q.Stale); err != nil {
		return nil, err
	}
	rows := l.fsm.Usage(q.From, q.To, q.Tenant, q.Resource)
	out := make([]*ledgerdv1.UsageRow, len(rows))
	for i, r := range rows {
		out[i] = &ledgerdv1.UsageRow{
			Tenant: r.Tenant, Resource: r.Resource,
			BookedUnitSeconds: r.Booked / 1000, HeldUnitSeconds: r.Held / 1000,
			ReleasedEarlyUnitSeconds: r.ReleasedEarly / 1000, ExpiredUnitSeconds: r.Expired / 1000,
			CancelledUnitSeconds: r.Cancelled / 1000, Reservations: int64(r.Reservations),
			Saturated: r.Saturated,
		}
	}
	return out, nil
}

// Decide implements ledger.Tenancy.
func (l *Ledger) Decide(ctx context.Context, w ledger.Write, id string, approve bool, reason string) (*ledgerdv1.Reservation, error) {
	t, op := fsmv1.Command_TYPE_DENY, "deny"
	if approve {
		t, op = fsmv1.Command_TYPE_APPROVE, "approve"
	}
	cmd := envelope(t, w)
	cmd.Payload = &fsmv1.Command_Decision{Decision: &fsmv1.Decision{Id: id, Reason: reason}}
	res, err := l.apply(ctx, op, cmd)
	if err != nil {
		return nil, err
	}
	return reservationToAPI(res.GetReservation()), nil
}

// limitToAPI converts a limit entry; nil stays nil.
func limitToAPI(e *fsmv1.TenantLimit) *ledgerdv1.TenantLimit {
	if e == nil {
		return nil
	}
	out := &ledgerdv1.TenantLimit{Tenant: e.GetTenant(), Resource: e.GetResource(), Version: e.GetUpdatedVersion()}
	sp := e.GetSpec()
	if sp == nil {
		return out
	}
	out.Limits = &ledgerdv1.Limits{
		MaxUnits:              sp.GetMaxUnits(),
		MaxUnitHours:          sp.GetMaxUnitMillis() / msPerHour,
		Window:                msDuration(sp.GetWindowMillis()),
		MaxAhead:              msDuration(sp.GetMaxAheadMillis()),
		MaxDuration:           msDuration(sp.GetMaxDurationMillis()),
		MaxHoldTtl:            msDuration(sp.GetMaxHoldTtlMillis()),
		ApprovalRequired:      sp.GetApprovalRequired(),
		ApprovalAboveUnits:    sp.GetApprovalAboveUnits(),
		ApprovalAboveDuration: msDuration(sp.GetApprovalAboveDurationMillis()),
		ApprovalTtl:           msDuration(sp.GetApprovalTtlMillis()),
	}
	return out
}

// msDuration is ms as a Duration, nil for 0 (no limit).
func msDuration(ms int64) *durationpb.Duration {
	if ms == 0 {
		return nil
	}
	return ledger.MsToDuration(ms)
}

// limitErr is the API's error for a STATUS_LIMIT_EXCEEDED result: the
// detail in the API's units and a message in its terms.
func limitErr(r *fsmv1.Result) error {
	le := r.GetLimitExceeded()
	d := &ledgerdv1.LimitExceeded{
		Tenant: le.GetTenant(), Resource: le.GetResource(), EntryTenant: le.GetEntryTenant(), EntryResource: le.GetEntryResource(),
		LimitValue: le.GetLimitValue(), Usage: le.GetUsage(), Requested: le.GetRequested(), Fits: le.GetFits(), Over: le.GetOver(),
	}
	show := func(v int64) string { return fmt.Sprintf("%d %s", v, d.Unit) }
	switch le.GetLimit() {
	case "max_units":
		d.Limit, d.Unit = "max_units", "units"
	case "max_unit_millis":
		// unit-ms to unit-seconds; the limit itself was set in unit-hours.
		d.Limit, d.Unit = "max_unit_hours", "unit-seconds"
		d.LimitValue, d.Usage, d.Requested = d.LimitValue/1000, d.Usage/1000, ceilDiv(d.Requested, 1000)
		show = func(v int64) string { return unitHours(v) }
	default:
		d.Limit, d.Unit = strings.TrimSuffix(le.GetLimit(), "_millis"), "ms"
		show = func(v int64) string {
			return time.Duration(min(v, math.MaxInt64/int64(time.Millisecond)) * int64(time.Millisecond)).String()
		}
	}
	var what string
	switch {
	case d.Over:
		what = fmt.Sprintf("usage %s is already over it (a lowered limit refuses new bookings only)", show(d.Usage))
	case d.Unit == "ms":
		what = fmt.Sprintf("request %s; at most %s", show(d.Requested), show(d.Fits))
	case d.Limit == "max_unit_hours":
		what = fmt.Sprintf("usage %s + request %s in one window; at most %d units over the same interval would fit", show(d.Usage), show(d.Requested), d.Fits)
	default:
		what = fmt.Sprintf("usage %s + request %s; %s would fit", show(d.Usage), show(d.Requested), show(d.Fits))
	}
	entry := d.EntryTenant + "/" + d.EntryResource
	msg := fmt.Sprintf("tenant %q on %q: %s %s (entry %s): %s", d.Tenant, d.Resource, d.Limit, show(d.LimitValue), entry, what)
	return &ledger.LimitError{Message: msg, Detail: d}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// unitHours shows unit-seconds as unit-hours with two decimals.
func unitHours(s int64) string {
	return fmt.Sprintf("%d.%02d unit-hours", s/3600, s%3600*100/3600)
}
