package rpc

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

// resources implements ResourceService.
type resources struct {
	ledgerdv1connect.UnimplementedResourceServiceHandler
	s *Server
	l ledger.Ledger
}

// operatorWrite checks the operator role and builds the write arguments.
func (s *Server) operatorWrite(ctx context.Context, key string, msg proto.Message) (ledger.Write, error) {
	if _, err := requireOperator(ctx); err != nil {
		return ledger.Write{}, err
	}
	w, _, err := s.write(ctx, key, msg)
	return w, err
}

// Create implements ResourceService.Create.
func (h *resources) Create(ctx context.Context, req *connect.Request[ledgerdv1.CreateRequest]) (*connect.Response[ledgerdv1.CreateResponse], error) {
	w, err := h.s.operatorWrite(ctx, req.Msg.IdempotencyKey, req.Msg)
	if err != nil {
		return nil, err
	}
	r := req.Msg.Resource
	if r == nil {
		return nil, h.s.fail(&ledger.FieldError{Field: "resource", Reason: "required"})
	}
	// The name, capacity, unit and labels are the ledger's to check.
	if err := checkPolicy("resource.", r.Policy, r.MinSuccessPermille, r.MaxPushes); err != nil {
		return nil, h.s.fail(err)
	}
	if r, err = createUnits(req.Msg); err != nil {
		return nil, h.s.fail(err)
	}
	out, err := h.l.CreateResource(ctx, w, r)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.CreateResponse{Resource: out}), nil
}

// UpdateCapacity implements ResourceService.UpdateCapacity.
func (h *resources) UpdateCapacity(ctx context.Context, req *connect.Request[ledgerdv1.UpdateCapacityRequest]) (*connect.Response[ledgerdv1.UpdateCapacityResponse], error) {
	m := req.Msg
	w, err := h.s.operatorWrite(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	if m.Capacity < 0 {
		return nil, h.s.fail(&ledger.FieldError{Field: "capacity", Reason: "must be >= 0"})
	}
	a := ledger.CapacityArgs{Write: w, Name: m.Name, Capacity: m.Capacity}
	if m.From != nil || m.To != nil {
		a.From, a.To = h.s.nowMs(), ledger.NoDeadline
		if m.From != nil {
			if a.From, err = tsMs("from", m.From); err != nil {
				return nil, h.s.fail(err)
			}
		}
		if m.To != nil {
			if a.To, err = tsMs("to", m.To); err != nil {
				return nil, h.s.fail(err)
			}
		}
		if a.To <= a.From {
			return nil, h.s.fail(&ledger.FieldError{Field: "to", Reason: "must be after from"})
		}
	}
	out, err := h.l.UpdateCapacity(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.UpdateCapacityResponse{Resource: out}), nil
}

// Delete implements ResourceService.Delete.
func (h *resources) Delete(ctx context.Context, req *connect.Request[ledgerdv1.DeleteRequest]) (*connect.Response[ledgerdv1.DeleteResponse], error) {
	w, err := h.s.operatorWrite(ctx, req.Msg.IdempotencyKey, req.Msg)
	if err != nil {
		return nil, err
	}
	if err := h.l.DeleteResource(ctx, w, req.Msg.Name, req.Msg.Force); err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.DeleteResponse{}), nil
}

// List implements ResourceService.List; every authenticated caller may list.
func (h *resources) List(ctx context.Context, req *connect.Request[ledgerdv1.ResourceServiceListRequest]) (*connect.Response[ledgerdv1.ResourceServiceListResponse], error) {
	if _, err := callerOf(ctx); err != nil {
		return nil, err
	}
	rs, err := h.l.Resources(ctx, req.Msg.Stale)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.ResourceServiceListResponse{Resources: rs}), nil
}
