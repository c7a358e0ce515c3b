package rpc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

func TestShapeFromProto(t *testing.T) {
	const now = int64(1_000_000)
	at := func(ms int64) *timestamppb.Timestamp { return timestamppb.New(time.UnixMilli(ms)) }
	hour := durationpb.New(time.Hour)
	parts := func(ps ...*ledgerdv1.ResourceAmount) []*ledgerdv1.ResourceAmount { return ps }
	cpu := &ledgerdv1.ResourceAmount{Resource: "cpu", Amount: 4}
	// Only the wire is the edge's: the parts, the window and the end of
	// time are the ledger's to check (see the table test of bad requests).
	cases := []struct {
		name  string
		in    *ledgerdv1.Shape
		want  ledger.Shape
		field string // expected FieldError field, "" for success
	}{
		{"defaults", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour}, ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 4}}, Duration: 3_600_000, NotBefore: now, Deadline: ledger.NoDeadline}, ""},
		{"window", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, NotBefore: at(now + 10), Deadline: at(now + 10 + 3_600_000)}, ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 4}}, Duration: 3_600_000, NotBefore: now + 10, Deadline: now + 10 + 3_600_000}, ""},
		{"past not_before is now", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, NotBefore: at(5)}, ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 4}}, Duration: 3_600_000, NotBefore: now, Deadline: ledger.NoDeadline}, ""},
		{"exact start", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, ExactStart: at(now + 7)}, ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 4}}, Duration: 3_600_000, NotBefore: now + 7, Deadline: now + 7 + 3_600_000}, ""},
		{"nil", nil, ledger.Shape{}, "shape"},
		{"no duration", &ledgerdv1.Shape{Parts: parts(cpu)}, ledger.Shape{}, "shape.duration"},
		{"negative duration", &ledgerdv1.Shape{Parts: parts(cpu), Duration: durationpb.New(-time.Second)}, ledger.Shape{}, "shape.duration"},
		{"sub-millisecond duration", &ledgerdv1.Shape{Parts: parts(cpu), Duration: durationpb.New(time.Microsecond)}, ledger.Shape{}, "shape.duration"},
		{"invalid duration", &ledgerdv1.Shape{Parts: parts(cpu), Duration: &durationpb.Duration{Seconds: 1, Nanos: -1}}, ledger.Shape{}, "shape.duration"},
		{"invalid timestamp", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, NotBefore: &timestamppb.Timestamp{Nanos: 2e9}}, ledger.Shape{}, "shape.not_before"},
		{"huge duration kept for the ledger", &ledgerdv1.Shape{Parts: parts(cpu), Duration: durationpb.New(200 * 365 * 24 * time.Hour), ExactStart: at(now)}, ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 4}}, Duration: 200 * 365 * 24 * 3_600_000, NotBefore: now, Deadline: now + 200*365*24*3_600_000}, ""},
		{"ten thousand years", &ledgerdv1.Shape{Parts: parts(cpu), Duration: &durationpb.Duration{Seconds: 315_576_000_000}}, ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 4}}, Duration: 315_576_000_000_000, NotBefore: now, Deadline: ledger.NoDeadline}, ""},
		{"before 1970", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, Deadline: &timestamppb.Timestamp{Seconds: -10}}, ledger.Shape{}, "shape.deadline"},
		{"exact start with window", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, ExactStart: at(now), Deadline: at(now + 3_600_000)}, ledger.Shape{}, "shape.exact_start"},
		{"exact start in the past", &ledgerdv1.Shape{Parts: parts(cpu), Duration: hour, ExactStart: at(now - 1)}, ledger.Shape{}, "shape.exact_start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shapeFromProto("shape", tc.in, now)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			var fe *ledger.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}

func TestToConnectCodes(t *testing.T) {
	cases := []struct {
		err  error
		code connect.Code
	}{
		{&ledger.FieldError{Field: "x", Reason: "y"}, connect.CodeInvalidArgument},
		{fmt.Errorf("wrapped: %w", &ledger.FieldError{Field: "x"}), connect.CodeInvalidArgument},
		{&ledger.RejectedError{Reason: ReasonNoCapacity}, connect.CodeFailedPrecondition},
		{fmt.Errorf("get: %w", ledger.ErrNotFound), connect.CodeNotFound},
		{ledger.ErrExists, connect.CodeAlreadyExists},
		{ledger.ErrWrongState, connect.CodeFailedPrecondition},
		{ledger.ErrInUse, connect.CodeFailedPrecondition},
		{ledger.ErrUnavailable, connect.CodeUnavailable},
		{ledger.ErrOutcomeUnknown, connect.CodeUnavailable},
		{ledger.ErrPermission, connect.CodePermissionDenied},
		{ledger.ErrCompacted, connect.CodeOutOfRange},
		{context.Canceled, connect.CodeCanceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), connect.CodeDeadlineExceeded},
		{errors.New("boom"), connect.CodeInternal},
		{connect.NewError(connect.CodeAborted, errors.New("kept")), connect.CodeAborted},
	}
	for _, tc := range cases {
		if got := connect.CodeOf(toConnect(tc.err)); got != tc.code {
			t.Errorf("toConnect(%v) = %v, want %v", tc.err, got, tc.code)
		}
	}
	if toConnect(nil) != nil {
		t.Error("toConnect(nil) != nil")
	}
}

func TestRateLimiterRefills(t *testing.T) {
	now := time.Unix(0, 0)
	l := newRateLimiter(1, 2, func() time.Time { return now })
	for i := range 2 {
		if _, ok := l.allow("a"); !ok {
			t.Fatalf("call %d refused within the burst", i)
		}
	}
	wait, ok := l.allow("a")
	if ok || wait != time.Second {
		t.Fatalf("third call: ok=%v wait=%v, want refused with 1s", ok, wait)
	}
	if _, ok := l.allow("b"); !ok {
		t.Fatal("tenant b refused because of a")
	}
	now = now.Add(time.Second)
	if _, ok := l.allow("a"); !ok {
		t.Fatal("refused after refill")
	}
}

// TestRateLimiterNeverExceedsBudget checks, over random call times, that
// the calls admitted in any run never exceed burst + rate × elapsed.
func TestRateLimiterNeverExceedsBudget(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for trial := range 50 {
		rate, burst := float64(1+r.IntN(20)), 1+r.IntN(10)
		start := time.Unix(0, 0)
		now := start
		l := newRateLimiter(rate, burst, func() time.Time { return now })
		admitted := 0
		for range 500 {
			now = now.Add(time.Duration(r.IntN(int(200 * time.Millisecond))))
			if _, ok := l.allow("t"); ok {
				admitted++
			}
			budget := float64(burst) + rate*now.Sub(start).Seconds()
			if float64(admitted) > budget+1e-9 {
				t.Fatalf("trial %d (seed %d): admitted %d > budget %.2f", trial, seed, admitted, budget)
			}
		}
	}
}
