package rpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

// tenants serves TenantService from a ledger that implements
// ledger.Tenancy.
type tenants struct {
	ledgerdv1connect.UnimplementedTenantServiceHandler
	s *Server
	t ledger.Tenancy
}

// tenancy returns the ledger's Tenancy, or an Unimplemented error.
func (h *tenants) tenancy() (ledger.Tenancy, error) {
	if h.t == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("this server's ledger keeps no tenant limits"))
	}
	return h.t, nil
}

// SetLimits implements TenantService.SetLimits.
func (h *tenants) SetLimits(ctx context.Context, req *connect.Request[ledgerdv1.SetLimitsRequest]) (*connect.Response[ledgerdv1.SetLimitsResponse], error) {
	t, err := h.tenancy()
	if err != nil {
		return nil, err
	}
	m := req.Msg
	w, err := h.s.operatorWrite(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	// Names and the relations between fields are the ledger's to check.
	a := ledger.LimitsArgs{Write: w, Tenant: m.Tenant, Resource: m.Resource}
	if m.Limits != nil {
		if a.Spec, err = limitSpec(m.Limits); err != nil {
			return nil, h.s.fail(err)
		}
	}
	out, err := t.SetLimits(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.SetLimitsResponse{Limit: out}), nil
}

// limitSpec converts the public limits, naming the field at fault.
func limitSpec(l *ledgerdv1.Limits) (*ledger.LimitSpec, error) {
	sp := &ledger.LimitSpec{MaxUnits: l.MaxUnits, ApprovalRequired: l.ApprovalRequired, ApprovalAboveUnits: l.ApprovalAboveUnits}
	switch {
	case l.MaxUnits < 0:
		return nil, &ledger.FieldError{Field: "limits.max_units", Reason: "must be >= 0 (0 means none)"}
	case l.ApprovalAboveUnits < 0:
		return nil, &ledger.FieldError{Field: "limits.approval_above_units", Reason: "must be >= 0 (0 means none)"}
	case l.MaxUnitHours < 0:
		return nil, &ledger.FieldError{Field: "limits.max_unit_hours", Reason: "must be >= 0 (0 means none)"}
	case l.MaxUnitHours > math.MaxInt64/3_600_000:
		return nil, &ledger.FieldError{Field: "limits.max_unit_hours", Reason: fmt.Sprintf("must be at most %d", int64(math.MaxInt64/3_600_000))}
	}
	sp.MaxUnitMillis = l.MaxUnitHours * 3_600_000
	for _, d := range []struct {
		field string
		in    *durationpb.Duration
		out   *int64
	}{
		{"limits.window", l.Window, &sp.Window}, {"limits.max_ahead", l.MaxAhead, &sp.MaxAhead},
		{"limits.max_duration", l.MaxDuration, &sp.MaxDuration}, {"limits.max_hold_ttl", l.MaxHoldTtl, &sp.MaxHoldTTL},
		{"limits.approval_above_duration", l.ApprovalAboveDuration, &sp.ApprovalAboveDuration},
		{"limits.approval_ttl", l.ApprovalTtl, &sp.ApprovalTTL},
	} {
		if d.in == nil {
			continue
		}
		ms, err := durationMs(d.field, d.in)
		if err != nil {
			return nil, err
		}
		if ms <= 0 {
			return nil, &ledger.FieldError{Field: d.field, Reason: "must be at least 1ms (unset means none)"}
		}
		*d.out = ms
	}
	if (sp.MaxUnitMillis == 0) != (sp.Window == 0) {
		return nil, &ledger.FieldError{Field: "limits.window", Reason: "max_unit_hours and window go together"}
	}
	return sp, nil
}

// GetLimits implements TenantService.GetLimits.
func (h *tenants) GetLimits(ctx context.Context, req *connect.Request[ledgerdv1.GetLimitsRequest]) (*connect.Response[ledgerdv1.GetLimitsResponse], error) {
	t, err := h.tenancy()
	if err != nil {
		return nil, err
	}
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	tenant, err := h.ownTenant(p, m.Tenant)
	if err != nil {
		return nil, err
	}
	if m.Resource != "" && tenant == "" {
		return nil, h.s.fail(&ledger.FieldError{Field: "resource", Reason: "needs tenant (the entry in force is per tenant)"})
	}
	ls, eff, err := t.Limits(ctx, tenant, m.Resource, m.Stale)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.GetLimitsResponse{Limits: ls, Effective: eff}), nil
}

// ownTenant is the tenant a read may look at: any for an operator, the
// caller's own otherwise (its own by default).
func (h *tenants) ownTenant(p Principal, asked string) (string, error) {
	if p.Operator {
		return asked, nil
	}
	if asked != "" && asked != p.Tenant {
		return "", h.s.fail(fmt.Errorf("tenant %q may not read tenant %q: %w", p.Tenant, asked, ledger.ErrPermission))
	}
	return p.Tenant, nil
}

// Usage implements TenantService.Usage.
func (h *tenants) Usage(ctx context.Context, req *connect.Request[ledgerdv1.UsageRequest]) (*connect.Response[ledgerdv1.UsageResponse], error) {
	t, err := h.tenancy()
	if err != nil {
		return nil, err
	}
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	q := ledger.UsageQuery{Resource: m.Resource, Stale: m.Stale}
	if q.Tenant, err = h.ownTenant(p, m.Tenant); err != nil {
		return nil, err
	}
	if q.From, q.To, err = windowMs(m.From, m.To, 0, false); err != nil {
		return nil, h.s.fail(err)
	}
	rows, err := t.Usage(ctx, q)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.UsageResponse{Rows: rows}), nil
}

// Approve implements TenantService.Approve.
func (h *tenants) Approve(ctx context.Context, req *connect.Request[ledgerdv1.ApproveRequest]) (*connect.Response[ledgerdv1.ApproveResponse], error) {
	r, err := h.decide(ctx, req.Msg.IdempotencyKey, req.Msg, req.Msg.Id, true, req.Msg.Note)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.ApproveResponse{Reservation: r}), nil
}

// Deny implements TenantService.Deny.
func (h *tenants) Deny(ctx context.Context, req *connect.Request[ledgerdv1.DenyRequest]) (*connect.Response[ledgerdv1.DenyResponse], error) {
	r, err := h.decide(ctx, req.Msg.IdempotencyKey, req.Msg, req.Msg.Id, false, req.Msg.Reason)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.DenyResponse{Reservation: r}), nil
}

func (h *tenants) decide(ctx context.Context, key string, msg proto.Message, id string, approve bool, reason string) (*ledgerdv1.Reservation, error) {
	t, err := h.tenancy()
	if err != nil {
		return nil, err
	}
	w, err := h.s.operatorWrite(ctx, key, msg)
	if err != nil {
		return nil, err
	}
	r, err := t.Decide(ctx, w, id, approve, reason)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return r, nil
}

// newTenants serves TenantService for s: from its ledger's Tenancy, or
// Unimplemented when the ledger has none.
func newTenants(s *Server) *tenants {
	t, _ := s.opts.Ledger.(ledger.Tenancy)
	return &tenants{s: s, t: t}
}

// limitErr is ResourceExhausted with the ledgerd.v1.LimitExceeded detail
// and ErrorInfo{LIMIT_EXCEEDED, limit, fits}.
func limitErr(err error, le *ledger.LimitError) *connect.Error {
	e := connect.NewError(connect.CodeResourceExhausted, err)
	addDetail(e, le.Detail)
	addDetail(e, &errdetails.ErrorInfo{Reason: ledger.ReasonLimitExceeded, Domain: ErrorDomain, Metadata: map[string]string{
		"limit": le.Detail.GetLimit(), "fits": strconv.FormatInt(le.Detail.GetFits(), 10), "unit": le.Detail.GetUnit(),
	}})
	return e
}

// LimitExceeded extracts the limit detail from an error returned by a
// ledgerd server; ok is false for other errors.
func LimitExceeded(err error) (*ledgerdv1.LimitExceeded, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if le, ok := v.(*ledgerdv1.LimitExceeded); ok {
				return le, true
			}
		}
	}
	return nil, false
}
