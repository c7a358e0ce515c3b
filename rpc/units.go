package rpc

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/hostlist"
	"github.com/ledgerd/ledgerd/ledger"
)

// Resources made of named units: the hostlist of ResourceService.Create,
// and UnitDown/UnitUp.

// ReasonUnmappable is the ErrorInfo reason of a rejection on a resource
// with units when enough units are free in sum but no set of units is
// free for the whole window.
const ReasonUnmappable = ledger.ReasonUnmappable

// MaxUnits is the most units one resource may have (the state machine's
// bound; the ledger tests check that they agree).
const MaxUnits = 1 << 16

// createUnits returns the resource to create with the units of the
// request's hostlist (CreateRequest.nodes) expanded into Resource.units;
// without a hostlist, r itself. Errors name the field.
func createUnits(m *ledgerdv1.CreateRequest) (*ledgerdv1.Resource, error) {
	r := m.GetResource()
	if m.GetNodes() == "" {
		if len(r.GetUnits()) > MaxUnits {
			return nil, &ledger.FieldError{Field: "resource.units", Reason: fmt.Sprintf("%d units: at most %d", len(r.GetUnits()), MaxUnits)}
		}
		return r, nil
	}
	if len(r.GetUnits()) > 0 {
		return nil, &ledger.FieldError{Field: "nodes", Reason: "give the units either as a hostlist here or in resource.units, not both"}
	}
	names, err := hostlist.Expand(m.GetNodes(), MaxUnits)
	if err != nil {
		return nil, &ledger.FieldError{Field: "nodes", Reason: fmt.Sprintf("bad hostlist %q: %v", m.GetNodes(), err)}
	}
	r = proto.CloneOf(r)
	r.Units = names
	return r, nil
}

// unitLedger returns the ledger's unit contract, or Unimplemented.
func (h *resources) unitLedger() (ledger.UnitLedger, error) {
	ul, ok := h.l.(ledger.UnitLedger)
	if !ok {
		return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("this ledger has no resources with units"))
	}
	return ul, nil
}

// UnitDown implements ResourceService.UnitDown.
func (h *resources) UnitDown(ctx context.Context, req *connect.Request[ledgerdv1.UnitDownRequest]) (*connect.Response[ledgerdv1.UnitDownResponse], error) {
	m := req.Msg
	w, err := h.s.operatorWrite(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	ul, err := h.unitLedger()
	if err != nil {
		return nil, err
	}
	a := ledger.UnitDownArgs{Write: w, Name: m.Name, Unit: m.Unit, ID: m.Id}
	if a.From, a.To, err = windowMs(m.From, m.To, h.s.nowMs(), true); err != nil {
		return nil, h.s.fail(err)
	}
	out, id, err := ul.UnitDown(ctx, a)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.UnitDownResponse{Resource: out, Id: id}), nil
}

// ChangeUnits implements ResourceService.ChangeUnits: the hostlists add
// and remove are expanded here, so a bad one is an InvalidArgument naming
// its field before anything is proposed.
func (h *resources) ChangeUnits(ctx context.Context, req *connect.Request[ledgerdv1.ChangeUnitsRequest]) (*connect.Response[ledgerdv1.ChangeUnitsResponse], error) {
	m := req.Msg
	w, err := h.s.operatorWrite(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	ul, err := h.unitLedger()
	if err != nil {
		return nil, err
	}
	if m.Name == "" {
		return nil, h.s.fail(&ledger.FieldError{Field: "name", Reason: "required"})
	}
	add, err := expandUnits("add", m.Add)
	if err != nil {
		return nil, h.s.fail(err)
	}
	remove, err := expandUnits("remove", m.Remove)
	if err != nil {
		return nil, h.s.fail(err)
	}
	if len(add) == 0 && len(remove) == 0 {
		return nil, h.s.fail(&ledger.FieldError{Field: "add", Reason: "add or remove at least one unit"})
	}
	out, err := ul.ChangeUnits(ctx, w, m.Name, add, remove)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.ChangeUnitsResponse{Resource: out}), nil
}

// expandUnits expands the hostlist of a unit change ("" is none).
func expandUnits(field, list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	names, err := hostlist.Expand(list, MaxUnits)
	if err != nil {
		return nil, &ledger.FieldError{Field: field, Reason: fmt.Sprintf("bad hostlist %q: %v", list, err)}
	}
	return names, nil
}

// UnitUp implements ResourceService.UnitUp.
func (h *resources) UnitUp(ctx context.Context, req *connect.Request[ledgerdv1.UnitUpRequest]) (*connect.Response[ledgerdv1.UnitUpResponse], error) {
	m := req.Msg
	w, err := h.s.operatorWrite(ctx, m.IdempotencyKey, m)
	if err != nil {
		return nil, err
	}
	ul, err := h.unitLedger()
	if err != nil {
		return nil, err
	}
	out, err := ul.UnitUp(ctx, w, m.Name, m.Id)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.UnitUpResponse{Resource: out}), nil
}
