package rpc

import (
	"context"
	"errors"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every ledgerd error.
const ErrorDomain = "ledgerd.io"

// Reasons carried in google.rpc.ErrorInfo.reason.
const (
	ReasonNoCapacity      = ledger.ReasonNoCapacity
	ReasonInvalid         = "INVALID_ARGUMENT"
	ReasonNotFound        = "NOT_FOUND"
	ReasonExists          = "ALREADY_EXISTS"
	ReasonWrongState      = "WRONG_STATE"
	ReasonInUse           = "RESOURCE_IN_USE"
	ReasonNoLeader        = "NO_LEADER"
	ReasonOutcomeUnknown  = "OUTCOME_UNKNOWN"
	ReasonPermission      = "PERMISSION_DENIED"
	ReasonUnauthenticated = "UNAUTHENTICATED"
	ReasonRateLimited     = "RATE_LIMITED"
	ReasonCompacted       = "HISTORY_COMPACTED"
)

// toConnect maps an outcome error to a *connect.Error with details:
//
//   - *FieldError            → InvalidArgument + BadRequest{field} + ErrorInfo
//   - *RejectedError         → FailedPrecondition + ledgerd.v1.Rejection + ErrorInfo{NO_CAPACITY, earliest_start}
//     (*SeriesRejectedError adds a ledgerd.v1.SkippedOccurrence per occurrence)
//   - *LimitError            → ResourceExhausted + ledgerd.v1.LimitExceeded + ErrorInfo{LIMIT_EXCEEDED}
//   - ErrNotFound            → NotFound
//   - ErrExists              → AlreadyExists
//   - ErrWrongState/ErrInUse → FailedPrecondition
//   - ErrUnavailable         → Unavailable (no leader; retry is safe)
//   - ErrOutcomeUnknown      → Unavailable (retry with the same idempotency key)
//   - ErrPermission          → PermissionDenied
//   - ErrCompacted           → OutOfRange
//   - context errors         → Canceled / DeadlineExceeded
//   - anything else          → Internal
func toConnect(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	var fe *ledger.FieldError
	if errors.As(err, &fe) {
		return fieldErr(fe)
	}
	var le *ledger.LimitError
	if errors.As(err, &le) {
		return limitErr(err, le)
	}
	var re *ledger.RejectedError
	if errors.As(err, &re) {
		e := connect.NewError(connect.CodeFailedPrecondition, err)
		rej := &ledgerdv1.Rejection{Reason: re.Reason, Message: re.Message}
		meta := map[string]string{}
		if re.LaterOK {
			rej.EarliestStart = timestamppb.New(msTime(re.LaterStart))
			meta["earliest_start"] = msTime(re.LaterStart).Format(timeFormat)
			meta["earliest_start_unix_ms"] = strconv.FormatInt(re.LaterStart, 10)
		}
		addDetail(e, rej)
		addDetail(e, &errdetails.ErrorInfo{Reason: re.Reason, Domain: ErrorDomain, Metadata: meta})
		// An all-or-nothing series: every occurrence that did not fit.
		var se *ledger.SeriesRejectedError
		if errors.As(err, &se) {
			for _, sk := range se.Skipped {
				addDetail(e, sk)
			}
		}
		return e
	}
	code, reason := connect.CodeInternal, ""
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		code, reason = connect.CodeNotFound, ReasonNotFound
	case errors.Is(err, ledger.ErrExists):
		code, reason = connect.CodeAlreadyExists, ReasonExists
	case errors.Is(err, ledger.ErrWrongState):
		code, reason = connect.CodeFailedPrecondition, ReasonWrongState
	case errors.Is(err, ledger.ErrInUse):
		code, reason = connect.CodeFailedPrecondition, ReasonInUse
	case errors.Is(err, ledger.ErrUnavailable):
		code, reason = connect.CodeUnavailable, ReasonNoLeader
	case errors.Is(err, ledger.ErrOutcomeUnknown):
		code, reason = connect.CodeUnavailable, ReasonOutcomeUnknown
	case errors.Is(err, ledger.ErrPermission):
		code, reason = connect.CodePermissionDenied, ReasonPermission
	case errors.Is(err, ledger.ErrCompacted):
		code, reason = connect.CodeOutOfRange, ReasonCompacted
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	e := connect.NewError(code, err)
	if reason != "" {
		addDetail(e, &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain})
	}
	return e
}

// fieldErr is InvalidArgument with google.rpc.BadRequest naming the field.
func fieldErr(fe *ledger.FieldError) *connect.Error {
	e := connect.NewError(connect.CodeInvalidArgument, fe)
	addDetail(e, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: fe.Field, Description: fe.Reason}}})
	addDetail(e, &errdetails.ErrorInfo{Reason: ReasonInvalid, Domain: ErrorDomain, Metadata: map[string]string{"field": fe.Field}})
	return e
}

func addDetail(e *connect.Error, m proto.Message) {
	if d, err := connect.NewErrorDetail(m); err == nil {
		e.AddDetail(d)
	}
}

// Rejection extracts the rejection detail from an error returned by a
// ledgerd server (or a client wrapping one); ok is false for other errors.
func Rejection(err error) (r *ledgerdv1.Rejection, ok bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if r, ok := v.(*ledgerdv1.Rejection); ok {
			return r, true
		}
	}
	return nil, false
}

// BadField returns the first field named by a BadRequest detail of err.
func BadField(err error) (field string, ok bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return "", false
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if br, ok := v.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
			return br.FieldViolations[0].Field, true
		}
	}
	return "", false
}

// LeaderHeader carries the leader's API address on unary responses and on
// errors, so that clients can send writes straight to the leader.
const LeaderHeader = "Ledgerd-Leader"

// leaderHint is an interceptor that adds LeaderHeader to unary responses
// and to the errors of unary and streaming calls.
type leaderHint func() string

func (h leaderHint) annotate(err error) error {
	var ce *connect.Error
	if h == nil || !errors.As(err, &ce) {
		return err
	}
	if a := h(); a != "" {
		ce.Meta().Set(LeaderHeader, a)
	}
	return err
}

// WrapUnary implements connect.Interceptor. It also refuses a request
// the strict JSON codec marked with an unknown field (see StrictJSON):
// every service is mounted with this interceptor.
func (h leaderHint) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if fe, ok := unknownOf(req.Any()); ok {
			return nil, h.annotate(fieldErr(fe))
		}
		resp, err := next(ctx, req)
		if err != nil {
			return resp, h.annotate(err)
		}
		if h != nil && resp != nil {
			if a := h(); a != "" {
				resp.Header().Set(LeaderHeader, a)
			}
		}
		return resp, nil
	}
}

// WrapStreamingClient implements connect.Interceptor; clients pass through.
func (h leaderHint) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler implements connect.Interceptor.
func (h leaderHint) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return h.annotate(next(ctx, conn))
	}
}

// fail maps err like toConnect and logs the errors that become Internal
// (a bug or an unexpected failure: the caller learns only that something
// went wrong, so the operator must learn what) on the server's logger.
func (s *Server) fail(err error) error {
	ce := toConnect(err)
	var e *connect.Error
	if errors.As(ce, &e) && e.Code() == connect.CodeInternal {
		s.opts.Logger.Error("request failed with an internal error", "err", err)
	}
	return ce
}
