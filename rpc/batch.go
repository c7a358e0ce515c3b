package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/anypb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Batch implements ReservationService.Batch. Every operation runs through
// its unary handler, so validation, authorization and errors are the
// unary call's; the operations run concurrently, and when the Ledger can
// pipeline (a ledger.Pipeliner, as the replicated ledger is) their writes are proposed
// together in request order and their reads share one barrier. The
// interceptor charged the call one rate-limit token; every further
// operation takes its own.
//
// A batch of one operation (what a coalescing client sends at low load)
// has nothing to gather: it runs on the request's goroutine straight
// through the server's Ledger, exactly as its unary call would, without
// a pipeline or a goroutine of its own. The operations of a longer batch
// run on the server's operation workers (see opWorkers), whose stacks
// have already grown through the handler chain.
func (h *reservations) Batch(ctx context.Context, req *connect.Request[ledgerdv1.BatchRequest]) (*connect.Response[ledgerdv1.BatchResponse], error) {
	ops := req.Msg.Operations
	if len(ops) > h.s.opts.MaxBatch {
		return nil, h.s.fail(&ledger.FieldError{Field: "operations", Reason: fmt.Sprintf("at most %d operations per batch, got %d", h.s.opts.MaxBatch, len(ops))})
	}
	p, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	results := make([]*ledgerdv1.BatchResult, len(ops))
	if len(ops) == 1 {
		results[0] = h.runOp(ctx, 0, ops[0])
		return connect.NewResponse(&ledgerdv1.BatchResponse{Results: results}), nil
	}
	var pl ledger.Pipeline
	if pr, ok := h.l.(ledger.Pipeliner); ok {
		pl = pr.Pipeline(len(ops))
	}
	done := func(i int) {
		if pl != nil {
			pl.Done(i)
		}
	}
	var wg sync.WaitGroup
	for i, op := range ops {
		// Tokens are taken in operation order, before anything runs.
		if i > 0 {
			if err := h.s.limiter.take(p.Tenant); err != nil {
				results[i] = errResult(err)
				done(i)
				continue
			}
		}
		oh := h
		if pl != nil {
			oh = &reservations{s: h.s, l: pl.Op(i)}
		}
		wg.Add(1)
		h.s.workers.Go(func() {
			defer wg.Done()
			defer done(i)
			results[i] = oh.runOp(ctx, i, op)
		})
	}
	if pl != nil {
		pl.Run(ctx)
	}
	wg.Wait()
	return connect.NewResponse(&ledgerdv1.BatchResponse{Results: results}), nil
}

// answer calls a unary handler on m (an empty message when nil) and wraps
// its response with wrap, or its error.
func answer[Req, Resp any](ctx context.Context, m *Req, fn func(context.Context, *connect.Request[Req]) (*connect.Response[Resp], error), wrap func(*Resp) *ledgerdv1.BatchResult) *ledgerdv1.BatchResult {
	if m == nil {
		m = new(Req)
	}
	r, err := fn(ctx, connect.NewRequest(m))
	if err != nil {
		return errResult(err)
	}
	return wrap(r.Msg)
}

// runOp answers operation i through its unary handler.
func (h *reservations) runOp(ctx context.Context, i int, op *ledgerdv1.BatchOperation) *ledgerdv1.BatchResult {
	type br = ledgerdv1.BatchResult
	switch o := op.GetOp().(type) {
	case *ledgerdv1.BatchOperation_Hold:
		return answer(ctx, o.Hold, h.Hold, func(m *ledgerdv1.HoldResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Hold{Hold: m}} })
	case *ledgerdv1.BatchOperation_Reserve:
		return answer(ctx, o.Reserve, h.Reserve, func(m *ledgerdv1.ReserveResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Reserve{Reserve: m}} })
	case *ledgerdv1.BatchOperation_Commit:
		return answer(ctx, o.Commit, h.Commit, func(m *ledgerdv1.CommitResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Commit{Commit: m}} })
	case *ledgerdv1.BatchOperation_Abort:
		return answer(ctx, o.Abort, h.Abort, func(m *ledgerdv1.AbortResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Abort{Abort: m}} })
	case *ledgerdv1.BatchOperation_Cancel:
		return answer(ctx, o.Cancel, h.Cancel, func(m *ledgerdv1.CancelResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Cancel{Cancel: m}} })
	case *ledgerdv1.BatchOperation_Modify:
		return answer(ctx, o.Modify, h.Modify, func(m *ledgerdv1.ModifyResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Modify{Modify: m}} })
	case *ledgerdv1.BatchOperation_Get:
		return answer(ctx, o.Get, h.Get, func(m *ledgerdv1.GetResponse) *br { return &br{Result: &ledgerdv1.BatchResult_Get{Get: m}} })
	}
	return errResult(h.s.fail(&ledger.FieldError{Field: fmt.Sprintf("operations[%d].op", i), Reason: "exactly one operation must be set"}))
}

// errResult carries err as the unary call would send it: code, message
// and details. Errors that are not *connect.Error reach clients of a unary
// call as Unknown, so they do here too.
func errResult(err error) *ledgerdv1.BatchResult {
	be := &ledgerdv1.BatchError{Code: uint32(connect.CodeUnknown), Message: err.Error()}
	var ce *connect.Error
	if errors.As(err, &ce) {
		be.Code, be.Message = uint32(ce.Code()), ce.Message()
		for _, d := range ce.Details() {
			be.Details = append(be.Details, &anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
		}
	}
	return &ledgerdv1.BatchResult{Result: &ledgerdv1.BatchResult_Error{Error: be}}
}
