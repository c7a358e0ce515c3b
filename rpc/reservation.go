package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

// reservations implements ReservationService.
type reservations struct {
	ledgerdv1connect.UnimplementedReservationServiceHandler
	s *Server
	// l is the ledger the handlers call: the server's, or inside a Batch
	// the operation's view of the batch's pipeline.
	l ledger.Ledger
}

// newKey returns a random idempotency key for callers that sent none.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "srv-" + hex.EncodeToString(b[:])
}

// write builds the common write arguments for the caller of the request
// msg (its fingerprint among them, when the caller chose the key).
func (s *Server) write(ctx context.Context, key string, msg proto.Message) (ledger.Write, Principal, error) {
	p, err := callerOf(ctx)
	if err != nil {
		return ledger.Write{}, p, err
	}
	if err := checkKey("idempotency_key", key); err != nil {
		return ledger.Write{}, p, s.fail(err)
	}
	var fp []byte
	if key == "" {
		// A fresh key can never be reused: nothing to compare.
		key = newKey()
	} else {
		fp = fingerprint(msg)
	}
	return ledger.Write{Tenant: p.Tenant, Operator: p.Operator, IdempotencyKey: key, Fingerprint: fp}, p, nil
}

// ttl converts a requested hold TTL (nil: the ledger's default). The
// upper bound is the ledger's (the state machine's MaxHoldTTL), so the
// edge and Apply cannot disagree; Options.MaxHoldTTL only adds a bound
// when it is set lower.
func (s *Server) ttl(field string, d *durationpb.Duration) (int64, error) {
	if d == nil {
		return 0, nil // the ledger's default
	}
	ms, err := durationMs(field, d)
	if err != nil {
		return 0, err
	}
	if ms <= 0 {
		return 0, &ledger.FieldError{Field: field, Reason: "must be > 0"}
	}
	if ms > s.opts.MaxHoldTTL.Milliseconds() {
		return 0, &ledger.FieldError{Field: field, Reason: fmt.Sprintf("must be at most %s", s.opts.MaxHoldTTL)}
	}
	return ms, nil
}

// own returns reservation id if the caller may see it.
func (h *reservations) own(ctx context.Context, p Principal, id string, stale bool) (*ledgerdv1.Reservation, error) {
	r, err := h.l.Get(ctx, id, stale)
	if err != nil {
		return nil, err
	}
	if !p.Operator && r.Tenant != p.Tenant {
		return nil, fmt.Errorf("reservation %q belongs to another tenant: %w", id, ledger.ErrPermission)
	}
	return r, nil
}

func (h *reservations) hold(ctx context.Context, msg proto.Message, shape *ledgerdv1.Shape, labels map[string]string, key string, ttl int64, commit bool) (*ledgerdv1.Reservation, []*ledgerdv1.MovedJob, error) {
	w, _, err := h.s.write(ctx, key, msg)
	if err != nil {
		return nil, nil, err
	}
	sh, err := shapeFromProto("shape", shape, h.s.nowMs())
	if err != nil {
		return nil, nil, h.s.fail(err)
	}
	// Labels are the ledger's to check (the state machine's limits).
	r, moved, err := h.l.Hold(ctx, ledger.HoldArgs{Write: w, Shape: sh, TTL: ttl, Labels: labels, Commit: commit})
	return r, moved, h.s.fail(err)
}

// Hold implements ReservationService.Hold.
func (h *reservations) Hold(ctx context.Context, req *connect.Request[ledgerdv1.HoldRequest]) (*connect.Response[ledgerdv1.HoldResponse], error) {
	m := req.Msg
	ttl, err := h.s.ttl("hold_ttl", m.HoldTtl)
	if err != nil {
		return nil, h.s.fail(err)
	}
	r, moved, err := h.hold(ctx, m, m.Shape, m.Labels, m.IdempotencyKey, ttl, false)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.HoldResponse{Reservation: r, Moved: moved}), nil
}

// Reserve implements ReservationService.Reserve.
func (h *reservations) Reserve(ctx context.Context, req *connect.Request[ledgerdv1.ReserveRequest]) (*connect.Response[ledgerdv1.ReserveResponse], error) {
	m := req.Msg
	r, moved, err := h.hold(ctx, m, m.Shape, m.Labels, m.IdempotencyKey, 0, true)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.ReserveResponse{Reservation: r, Moved: moved}), nil
}

// transition runs one id-based lifecycle write; the Ledger checks
// ownership atomically with the write.
func (h *reservations) transition(ctx context.Context, msg proto.Message, id, key string, op func(context.Context, ledger.Write, string) (*ledgerdv1.Reservation, error)) (*ledgerdv1.Reservation, error) {
	w, _, err := h.s.write(ctx, key, msg)
	if err != nil {
		return nil, err
	}
	r, err := op(ctx, w, id)
	return r, h.s.fail(err)
}

// Commit implements ReservationService.Commit.
func (h *reservations) Commit(ctx context.Context, req *connect.Request[ledgerdv1.CommitRequest]) (*connect.Response[ledgerdv1.CommitResponse], error) {
	r, err := h.transition(ctx, req.Msg, req.Msg.Id, req.Msg.IdempotencyKey, h.l.Commit)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.CommitResponse{Reservation: r}), nil
}

// Abort implements ReservationService.Abort.
func (h *reservations) Abort(ctx context.Context, req *connect.Request[ledgerdv1.AbortRequest]) (*connect.Response[ledgerdv1.AbortResponse], error) {
	r, err := h.transition(ctx, req.Msg, req.Msg.Id, req.Msg.IdempotencyKey, h.l.Abort)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.AbortResponse{Reservation: r}), nil
}

// Cancel implements ReservationService.Cancel.
func (h *reservations) Cancel(ctx context.Context, req *connect.Request[ledgerdv1.CancelRequest]) (*connect.Response[ledgerdv1.CancelResponse], error) {
	r, err := h.transition(ctx, req.Msg, req.Msg.Id, req.Msg.IdempotencyKey, h.l.Cancel)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.CancelResponse{Reservation: r}), nil
}

// Complete implements ReservationService.Complete.
func (h *reservations) Complete(ctx context.Context, req *connect.Request[ledgerdv1.CompleteRequest]) (*connect.Response[ledgerdv1.CompleteResponse], error) {
	r, err := h.transition(ctx, req.Msg, req.Msg.Id, req.Msg.IdempotencyKey, func(ctx context.Context, w ledger.Write, id string) (*ledgerdv1.Reservation, error) {
		var at int64
		if req.Msg.At != nil {
			var err error
			if at, err = tsMs("at", req.Msg.At); err != nil {
				return nil, err
			}
			// 0 means "now" to the Ledger; the epoch is long past anyway.
			at = max(at, 1)
		}
		return h.l.Complete(ctx, w, id, at)
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ledgerdv1.CompleteResponse{Reservation: r}), nil
}

// Modify implements ReservationService.Modify.
func (h *reservations) Modify(ctx context.Context, req *connect.Request[ledgerdv1.ModifyRequest]) (*connect.Response[ledgerdv1.ModifyResponse], error) {
	m := req.Msg
	w, _, err := h.s.write(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	sh, err := shapeFromProto("shape", m.Shape, h.s.nowMs())
	if err != nil {
		return nil, h.s.fail(err)
	}
	ttl, err := h.s.ttl("hold_ttl", m.HoldTtl)
	if err != nil {
		return nil, h.s.fail(err)
	}
	r, err := h.l.Modify(ctx, ledger.ModifyArgs{Write: w, ID: m.Id, Shape: sh, TTL: ttl})
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.ModifyResponse{Reservation: r}), nil
}

// Get implements ReservationService.Get.
func (h *reservations) Get(ctx context.Context, req *connect.Request[ledgerdv1.GetRequest]) (*connect.Response[ledgerdv1.GetResponse], error) {
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	r, err := h.own(ctx, p, req.Msg.Id, req.Msg.Stale)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.GetResponse{Reservation: r}), nil
}

const (
	defaultPage = 100
	maxPage     = 1000
)

// List implements ReservationService.List.
func (h *reservations) List(ctx context.Context, req *connect.Request[ledgerdv1.ListRequest]) (*connect.Response[ledgerdv1.ListResponse], error) {
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	q := ledger.ListQuery{Resource: m.Resource, Tenant: m.Tenant, States: m.States, Stale: m.Stale, Limit: defaultPage, Series: m.SeriesId}
	if !p.Operator {
		if m.Tenant != "" && m.Tenant != p.Tenant {
			return nil, h.s.fail(fmt.Errorf("tenant %q may not list tenant %q: %w", p.Tenant, m.Tenant, ledger.ErrPermission))
		}
		q.Tenant = p.Tenant
	}
	switch {
	case m.PageSize < 0:
		return nil, h.s.fail(&ledger.FieldError{Field: "page_size", Reason: "must be >= 0"})
	case m.PageSize > maxPage:
		q.Limit = maxPage
	case m.PageSize > 0:
		q.Limit = int(m.PageSize)
	}
	for i, st := range m.States {
		if _, ok := ledgerdv1.ReservationState_name[int32(st)]; !ok || st == ledgerdv1.ReservationState_RESERVATION_STATE_UNSPECIFIED {
			return nil, h.s.fail(&ledger.FieldError{Field: fmt.Sprintf("states[%d]", i), Reason: "unknown state"})
		}
	}
	if q.From, q.To, err = windowMs(m.From, m.To, 0, false); err != nil {
		return nil, h.s.fail(err)
	}
	if len(m.PageToken) > 256 {
		return nil, h.s.fail(&ledger.FieldError{Field: "page_token", Reason: "malformed"})
	}
	q.PageToken = m.PageToken
	rs, next, err := h.l.List(ctx, q)
	if err != nil {
		return nil, h.s.fail(err)
	}
	resp := &ledgerdv1.ListResponse{Reservations: rs, NextPageToken: next}
	return connect.NewResponse(resp), nil
}

// Find implements ReservationService.Find.
func (h *reservations) Find(ctx context.Context, req *connect.Request[ledgerdv1.FindRequest]) (*connect.Response[ledgerdv1.FindResponse], error) {
	sh, err := shapeFromProto("shape", req.Msg.Shape, h.s.nowMs())
	if err != nil {
		return nil, h.s.fail(err)
	}
	f, err := h.l.Find(ctx, sh)
	if err != nil {
		return nil, h.s.fail(err)
	}
	resp := &ledgerdv1.FindResponse{Fits: f.Fits}
	if f.Fits {
		resp.Start = ledger.MsToTimestamp(f.Start)
	} else if f.LaterOK {
		resp.LaterStart = ledger.MsToTimestamp(f.LaterStart)
	}
	return connect.NewResponse(resp), nil
}

// Offers implements ReservationService.Offers.
func (h *reservations) Offers(ctx context.Context, req *connect.Request[ledgerdv1.OffersRequest]) (*connect.Response[ledgerdv1.OffersResponse], error) {
	sh, err := shapeFromProto("shape", req.Msg.Shape, h.s.nowMs())
	if err != nil {
		return nil, h.s.fail(err)
	}
	k := int(req.Msg.MaxOffers)
	switch {
	case k < 0 || k > 100:
		return nil, h.s.fail(&ledger.FieldError{Field: "max_offers", Reason: "must be between 0 and 100"})
	case k == 0:
		k = 5
	}
	starts, err := h.l.Offers(ctx, sh, k)
	if err != nil {
		return nil, h.s.fail(err)
	}
	resp := &ledgerdv1.OffersResponse{}
	for _, st := range starts {
		resp.Offers = append(resp.Offers, &ledgerdv1.Offer{Start: ledger.MsToTimestamp(st), End: ledger.MsToTimestamp(st + sh.Duration)})
	}
	return connect.NewResponse(resp), nil
}

// Availability implements ReservationService.Availability.
func (h *reservations) Availability(ctx context.Context, req *connect.Request[ledgerdv1.AvailabilityRequest]) (*connect.Response[ledgerdv1.AvailabilityResponse], error) {
	m := req.Msg
	from, to, err := windowMs(m.From, m.To, h.s.nowMs(), true)
	if err != nil {
		return nil, h.s.fail(err)
	}
	res, blocks, err := h.l.Availability(ctx, m.Resource, from, to)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.AvailabilityResponse{Resource: res, Blocks: blocks}), nil
}

// visible reports whether p may see event e: resource events are public,
// reservation events only to their tenant (and operators).
func visible(p Principal, e *ledgerdv1.Event) bool {
	if l := e.Limit; l != nil && !p.Operator {
		// A tenant sees its own limits and the defaults, not others'.
		return l.Tenant == p.Tenant || l.Tenant == "*"
	}
	return p.Operator || e.Reservation == nil || e.Reservation.Tenant == p.Tenant
}

// History implements ReservationService.History.
func (h *reservations) History(ctx context.Context, req *connect.Request[ledgerdv1.HistoryRequest]) (*connect.Response[ledgerdv1.HistoryResponse], error) {
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	limit := defaultPage
	switch {
	case m.Limit < 0:
		return nil, h.s.fail(&ledger.FieldError{Field: "limit", Reason: "must be >= 0"})
	case m.Limit > maxPage:
		limit = maxPage
	case m.Limit > 0:
		limit = int(m.Limit)
	}
	if len(m.ReservationId) > maxIDLen {
		return nil, h.s.fail(&ledger.FieldError{Field: "reservation_id", Reason: fmt.Sprintf("longer than %d bytes", maxIDLen)})
	}
	evs, err := h.l.History(ctx, m.FromVersion, m.FromIndex, limit)
	if err != nil {
		return nil, h.s.fail(err)
	}
	resp := &ledgerdv1.HistoryResponse{NextVersion: m.FromVersion, NextIndex: m.FromIndex}
	for _, e := range evs {
		resp.NextVersion, resp.NextIndex = e.Version, e.Index+1
		if m.ReservationId != "" && e.GetReservation().GetId() != m.ReservationId {
			continue
		}
		if visible(p, e) {
			resp.Events = append(resp.Events, e)
		}
	}
	return connect.NewResponse(resp), nil
}

// watchBatch is how many events Watch reads from the ledger at a time.
const watchBatch = 256

// Watch implements ReservationService.Watch: it replays history from the
// requested position, then follows the ledger as it applies entries. The
// position advances by (version, index), so a client resuming after the
// last event it saw gets neither a gap nor a duplicate.
func (h *reservations) Watch(ctx context.Context, req *connect.Request[ledgerdv1.WatchRequest], stream *connect.ServerStream[ledgerdv1.WatchResponse]) error {
	p, err := callerOf(ctx)
	if err != nil {
		return err
	}
	led := h.l
	v, idx := req.Msg.FromVersion, req.Msg.FromIndex
	if v == 0 {
		// Start after the current version and say so at once, so a client
		// that reconnects before the first event resumes from here.
		v, idx = led.Version()+1, 0
		if err := stream.Send(&ledgerdv1.WatchResponse{ProgressVersion: v}); err != nil {
			return fmt.Errorf("watch: send start: %w", err)
		}
	}
	progress := time.NewTicker(h.s.opts.WatchProgress)
	defer progress.Stop()
	for {
		applied := led.Version()
		changed := led.Notify(applied)
		evs, err := led.History(ctx, v, idx, watchBatch)
		if err != nil {
			return h.s.fail(err)
		}
		for _, e := range evs {
			v, idx = e.Version, e.Index+1
			if !visible(p, e) {
				continue
			}
			if err := stream.Send(&ledgerdv1.WatchResponse{Event: e}); err != nil {
				return fmt.Errorf("watch: send: %w", err)
			}
		}
		if len(evs) == watchBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-progress.C:
			// Every event up to version applied has been read (the batch
			// was short), so only later versions remain.
			if applied+1 > v {
				v, idx = applied+1, 0
			}
			if err := stream.Send(&ledgerdv1.WatchResponse{ProgressVersion: applied + 1}); err != nil {
				return fmt.Errorf("watch: send progress: %w", err)
			}
		}
	}
}
