package rpc

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

// seriesSvc implements SeriesService on a ledger that books standing
// reservations (ledger.SeriesLedger); on any other ledger every call
// answers Unimplemented.
type seriesSvc struct {
	ledgerdv1connect.UnimplementedSeriesServiceHandler
	s *Server
	l ledger.SeriesLedger
}

func newSeriesSvc(s *Server) *seriesSvc {
	l, _ := s.opts.Ledger.(ledger.SeriesLedger)
	return &seriesSvc{s: s, l: l}
}

var errNoSeries = connect.NewError(connect.CodeUnimplemented, errors.New("this ledger does not book standing reservations"))

// partsOf converts the wire's parts; amounts and names are the ledger's
// to check.
func partsOf(ps []*ledgerdv1.ResourceAmount) []ledger.Part {
	out := make([]ledger.Part, len(ps))
	for i, p := range ps {
		out[i] = ledger.Part{Resource: p.GetResource(), Amount: p.GetAmount()}
	}
	return out
}

// conflictMode reads a SeriesConflictMode: unset is all or nothing.
func conflictMode(field string, m ledgerdv1.SeriesConflictMode) (allOrNothing bool, err error) {
	switch m {
	case ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_UNSPECIFIED, ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_ALL_OR_NOTHING:
		return true, nil
	case ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_SKIP_CONFLICTS:
		return false, nil
	}
	return false, &ledger.FieldError{Field: field, Reason: fmt.Sprintf("unknown mode %d", int32(m))}
}

// ReserveSeries implements SeriesService.ReserveSeries.
func (h *seriesSvc) ReserveSeries(ctx context.Context, req *connect.Request[ledgerdv1.ReserveSeriesRequest]) (*connect.Response[ledgerdv1.ReserveSeriesResponse], error) {
	if h.l == nil {
		return nil, errNoSeries
	}
	m := req.Msg
	w, _, err := h.s.write(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	a := ledger.SeriesArgs{Write: w, ID: m.Id, Parts: partsOf(m.Parts), Repeat: m.Repeat, TZ: m.Tz, Labels: m.Labels}
	if a.Duration, err = durMs("duration", m.Duration); err != nil {
		return nil, h.s.fail(err)
	}
	if m.Start != nil {
		if a.Start, err = tsMs("start", m.Start); err != nil {
			return nil, h.s.fail(err)
		}
		a.HasStart = true
	}
	if m.Horizon != nil {
		if a.Horizon, err = durMs("horizon", m.Horizon); err != nil {
			return nil, h.s.fail(err)
		}
	}
	if a.AllOrNothing, err = conflictMode("conflicts", m.Conflicts); err != nil {
		return nil, h.s.fail(err)
	}
	out, err := h.l.ReserveSeries(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(out), nil
}

// GetSeries implements SeriesService.GetSeries.
func (h *seriesSvc) GetSeries(ctx context.Context, req *connect.Request[ledgerdv1.GetSeriesRequest]) (*connect.Response[ledgerdv1.GetSeriesResponse], error) {
	if h.l == nil {
		return nil, errNoSeries
	}
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	s, err := h.l.GetSeries(ctx, req.Msg.Id, req.Msg.Stale)
	if err != nil {
		return nil, h.s.fail(err)
	}
	if !p.Operator && s.Tenant != p.Tenant {
		return nil, h.s.fail(fmt.Errorf("series %q belongs to another tenant: %w", req.Msg.Id, ledger.ErrPermission))
	}
	return connect.NewResponse(&ledgerdv1.GetSeriesResponse{Series: s}), nil
}

// CancelSeries implements SeriesService.CancelSeries.
func (h *seriesSvc) CancelSeries(ctx context.Context, req *connect.Request[ledgerdv1.CancelSeriesRequest]) (*connect.Response[ledgerdv1.CancelSeriesResponse], error) {
	if h.l == nil {
		return nil, errNoSeries
	}
	m := req.Msg
	w, _, err := h.s.write(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	a := ledger.CancelSeriesArgs{Write: w, ID: m.Id}
	if m.From != nil {
		if a.From, err = tsMs("from", m.From); err != nil {
			return nil, h.s.fail(err)
		}
	}
	out, err := h.l.CancelSeries(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(out), nil
}

// ModifySeries implements SeriesService.ModifySeries.
func (h *seriesSvc) ModifySeries(ctx context.Context, req *connect.Request[ledgerdv1.ModifySeriesRequest]) (*connect.Response[ledgerdv1.ModifySeriesResponse], error) {
	if h.l == nil {
		return nil, errNoSeries
	}
	m := req.Msg
	w, _, err := h.s.write(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	a := ledger.ModifySeriesArgs{Write: w, ID: m.Id, NewID: m.NewId, Parts: partsOf(m.Parts)}
	if m.From == nil {
		return nil, h.s.fail(&ledger.FieldError{Field: "from", Reason: "required"})
	}
	if a.From, err = tsMs("from", m.From); err != nil {
		return nil, h.s.fail(err)
	}
	if m.Repeat != "" {
		return nil, h.s.fail(&ledger.FieldError{Field: "repeat", Reason: "a new rule is a new series: cancel this one from the date and reserve the new one"})
	}
	if m.Duration != nil {
		if a.Duration, err = durMs("duration", m.Duration); err != nil {
			return nil, h.s.fail(err)
		}
	}
	if allOrNothing, err := conflictMode("conflicts", m.Conflicts); err != nil {
		return nil, h.s.fail(err)
	} else if allOrNothing && m.Conflicts != ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_UNSPECIFIED {
		return nil, h.s.fail(&ledger.FieldError{Field: "conflicts", Reason: "the continuing series books what fits (SERIES_CONFLICT_MODE_SKIP_CONFLICTS)"})
	}
	out, err := h.l.ModifySeries(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(out), nil
}
