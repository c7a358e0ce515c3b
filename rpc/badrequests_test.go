package rpc_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
)

// badCase is one bad request: sent to proc as token, it must fail with
// InvalidArgument naming field (in a Batch: its first operation's error),
// over every protocol, and change nothing.
type badCase struct {
	name  string
	proc  string
	token string
	msg   proto.Message
	field string
	// send calls proc with msg over a Connect client with opts.
	send func(ctx context.Context, url string, opts []connect.ClientOption) (proto.Message, error)
}

// call builds a badCase for a unary procedure with request type Req.
func call[Req, Resp any, PReq interface {
	*Req
	proto.Message
}](name, proc, token string, msg PReq, field string) badCase {
	return badCase{name: name, proc: proc, token: token, msg: msg, field: field,
		send: func(ctx context.Context, url string, opts []connect.ClientOption) (proto.Message, error) {
			c := connect.NewClient[Req, Resp](h2cClient, url+proc, opts...)
			resp, err := c.CallUnary(ctx, connect.NewRequest((*Req)(msg)))
			if err != nil {
				return nil, err
			}
			m, _ := any(resp.Msg).(proto.Message)
			return m, nil
		}}
}

// h2cClient speaks HTTP/1.1 and HTTP/2 without TLS (gRPC needs HTTP/2).
var h2cClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	t.Protocols = p
	return &http.Client{Transport: t}
}()

const (
	rsv = "/ledgerd.v1.ReservationService/"
	rsc = "/ledgerd.v1.ResourceService/"
	srs = "/ledgerd.v1.SeriesService/"
)

// Reused idempotency keys, set up before the cases run.
const (
	keyHold    = "bad-requests-hold"
	keyReserve = "bad-requests-reserve"
	keyCreate  = "bad-requests-create"
	keyCancel  = "bad-requests-cancel"
)

func badCases(now time.Time) []badCase {
	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(d)) }
	dur := durationpb.New
	late := timestamppb.New(time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC))
	last := timestamppb.New(time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC))
	cpu := func(n int64) []*ledgerdv1.ResourceAmount {
		return []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: n}}
	}
	named := func(name string) []*ledgerdv1.ResourceAmount {
		return []*ledgerdv1.ResourceAmount{{Resource: name, Amount: 1}}
	}
	good := func() *ledgerdv1.Shape {
		return &ledgerdv1.Shape{Parts: cpu(1), Duration: dur(time.Hour), NotBefore: at(time.Hour)}
	}
	with := func(f func(s *ledgerdv1.Shape)) *ledgerdv1.Shape { s := good(); f(s); return s }
	many := func(n int) []*ledgerdv1.ResourceAmount {
		out := make([]*ledgerdv1.ResourceAmount, n)
		for i := range out {
			out[i] = &ledgerdv1.ResourceAmount{Resource: fmt.Sprintf("r%d", i), Amount: 1}
		}
		return out
	}
	labels := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("k%02d", i)] = "v"
		}
		return m
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	oddNames := []struct{ name, s string }{
		{"space", "a b"}, {"NUL", "a\x00b"}, {"DEL", "a\x7fb"}, {"accent", "é"}, {"CJK", "日本"},
		{"newline", "cpu\n"}, {"tab", "\tcpu"}, {"129 bytes", long(129)}, {"quote", `"cpu"`}, {"emoji", "cpu😀"},
	}
	acme, ops := agenttest.TokenAcme, agenttest.TokenOps
	var cs []badCase
	add := func(c ...badCase) { cs = append(cs, c...) }

	// Shapes: every RPC that takes one shares these fields.
	type shapeCase struct {
		name  string
		shape *ledgerdv1.Shape
		field string
	}
	shapes := []shapeCase{
		{"no shape", nil, "shape"},
		{"no parts", with(func(s *ledgerdv1.Shape) { s.Parts = nil }), "shape.parts"},
		{"65 parts", with(func(s *ledgerdv1.Shape) { s.Parts = many(65) }), "shape.parts"},
		{"empty resource", with(func(s *ledgerdv1.Shape) { s.Parts = named("") }), "shape.parts[0].resource"},
		{"duplicate resource", with(func(s *ledgerdv1.Shape) { s.Parts = append(cpu(1), cpu(2)...) }), "shape.parts[1].resource"},
		{"zero amount", with(func(s *ledgerdv1.Shape) { s.Parts = cpu(0) }), "shape.parts[0].amount"},
		{"negative amount", with(func(s *ledgerdv1.Shape) { s.Parts = cpu(-1) }), "shape.parts[0].amount"},
		{"min int64 amount", with(func(s *ledgerdv1.Shape) { s.Parts = cpu(-1 << 63) }), "shape.parts[0].amount"},
		{"second part zero", with(func(s *ledgerdv1.Shape) {
			s.Parts = append(cpu(1), &ledgerdv1.ResourceAmount{Resource: "gpu"})
		}), "shape.parts[1].amount"},
		{"no duration", with(func(s *ledgerdv1.Shape) { s.Duration = nil }), "shape.duration"},
		{"zero duration", with(func(s *ledgerdv1.Shape) { s.Duration = dur(0) }), "shape.duration"},
		{"negative duration", with(func(s *ledgerdv1.Shape) { s.Duration = dur(-time.Second) }), "shape.duration"},
		{"microsecond duration", with(func(s *ledgerdv1.Shape) { s.Duration = dur(time.Microsecond) }), "shape.duration"},
		{"mixed-sign duration", with(func(s *ledgerdv1.Shape) { s.Duration = &durationpb.Duration{Seconds: 1, Nanos: -1} }), "shape.duration"},
		{"duration past 10000 years", with(func(s *ledgerdv1.Shape) { s.Duration = &durationpb.Duration{Seconds: 315_576_000_001} }), "shape.duration"},
		{"duration of 10000 years", with(func(s *ledgerdv1.Shape) { s.Duration = &durationpb.Duration{Seconds: 315_576_000_000} }), "shape.duration"},
		{"not_before bad nanos", with(func(s *ledgerdv1.Shape) { s.NotBefore = &timestamppb.Timestamp{Seconds: 1, Nanos: 2e9} }), "shape.not_before"},
		{"not_before before 1970", with(func(s *ledgerdv1.Shape) { s.NotBefore = &timestamppb.Timestamp{Seconds: -1} }), "shape.not_before"},
		{"not_before year 1", with(func(s *ledgerdv1.Shape) { s.NotBefore = &timestamppb.Timestamp{Seconds: -62135596800} }), "shape.not_before"},
		{"not_before past year 9999", with(func(s *ledgerdv1.Shape) { s.NotBefore = &timestamppb.Timestamp{Seconds: 253402300800} }), "shape.not_before"},
		{"year 9999 window", with(func(s *ledgerdv1.Shape) { s.NotBefore, s.Duration = late, dur(2*time.Hour) }), "shape.duration"},
		{"last millisecond plus 1ms", with(func(s *ledgerdv1.Shape) { s.NotBefore, s.Duration = last, dur(time.Millisecond) }), "shape.duration"},
		{"deadline bad nanos", with(func(s *ledgerdv1.Shape) { s.Deadline = &timestamppb.Timestamp{Nanos: -1} }), "shape.deadline"},
		{"deadline before 1970", with(func(s *ledgerdv1.Shape) { s.Deadline = &timestamppb.Timestamp{Seconds: -5} }), "shape.deadline"},
		{"deadline before not_before", with(func(s *ledgerdv1.Shape) { s.Deadline = at(time.Minute) }), "shape.deadline"},
		{"window 1ms short", with(func(s *ledgerdv1.Shape) { s.Deadline = at(2*time.Hour - time.Millisecond) }), "shape.deadline"},
		{"exact_start and not_before", with(func(s *ledgerdv1.Shape) { s.ExactStart = at(time.Hour) }), "shape.exact_start"},
		{"exact_start and deadline", with(func(s *ledgerdv1.Shape) { s.NotBefore, s.ExactStart, s.Deadline = nil, at(time.Hour), at(3*time.Hour) }), "shape.exact_start"},
		{"exact_start in the past", with(func(s *ledgerdv1.Shape) { s.NotBefore, s.ExactStart = nil, at(-time.Hour) }), "shape.exact_start"},
		{"exact_start bad nanos", with(func(s *ledgerdv1.Shape) {
			s.NotBefore, s.ExactStart = nil, &timestamppb.Timestamp{Seconds: 1, Nanos: -5}
		}), "shape.exact_start"},
		{"exact_start year 9999", with(func(s *ledgerdv1.Shape) { s.NotBefore, s.ExactStart, s.Duration = nil, late, dur(2*time.Hour) }), "shape.duration"},
		{"exact_start last millisecond", with(func(s *ledgerdv1.Shape) { s.NotBefore, s.ExactStart, s.Duration = nil, last, dur(time.Millisecond) }), "shape.duration"},
	}
	for _, o := range oddNames {
		shapes = append(shapes, shapeCase{"resource " + o.name, with(func(s *ledgerdv1.Shape) { s.Parts = named(o.s) }), "shape.parts[0].resource"})
	}
	for _, sc := range shapes {
		add(call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/"+sc.name, rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: sc.shape}, sc.field))
	}
	// Reserve, Find, Offers and Modify share the shape checks; a sample.
	for _, i := range []int{0, 1, 4, 5, 9, 15, 20, 23, 25, 28, 31} {
		sc := shapes[i]
		add(call[ledgerdv1.ReserveRequest, ledgerdv1.ReserveResponse]("Reserve/"+sc.name, rsv+"Reserve", acme, &ledgerdv1.ReserveRequest{Shape: sc.shape}, sc.field))
	}
	for _, i := range []int{0, 1, 3, 6, 11, 20, 24, 28, 30} {
		sc := shapes[i]
		add(call[ledgerdv1.FindRequest, ledgerdv1.FindResponse]("Find/"+sc.name, rsv+"Find", acme, &ledgerdv1.FindRequest{Shape: sc.shape}, sc.field))
	}
	for _, i := range []int{0, 2, 7, 12, 21, 26} {
		sc := shapes[i]
		add(call[ledgerdv1.OffersRequest, ledgerdv1.OffersResponse]("Offers/"+sc.name, rsv+"Offers", acme, &ledgerdv1.OffersRequest{Shape: sc.shape}, sc.field))
	}
	for _, i := range []int{0, 2, 3, 4, 5, 10, 20, 25} {
		sc := shapes[i]
		add(call[ledgerdv1.ModifyRequest, ledgerdv1.ModifyResponse]("Modify/"+sc.name, rsv+"Modify", acme, &ledgerdv1.ModifyRequest{Id: "some-id", Shape: sc.shape}, sc.field))
	}

	// Hold's own fields.
	add(
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/zero ttl", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), HoldTtl: dur(0)}, "hold_ttl"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/negative ttl", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), HoldTtl: dur(-5 * time.Second)}, "hold_ttl"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/ttl above the ledger's 1h", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), HoldTtl: dur(2 * time.Hour)}, "hold_ttl"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/microsecond ttl", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), HoldTtl: dur(time.Microsecond)}, "hold_ttl"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/mixed-sign ttl", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), HoldTtl: &durationpb.Duration{Seconds: -1, Nanos: 1}}, "hold_ttl"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/65 labels", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), Labels: labels(65)}, "labels"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/empty label key", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), Labels: map[string]string{"": "v"}}, "labels"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/129-byte label key", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), Labels: map[string]string{long(129): "v"}}, fmt.Sprintf("labels[%q]", long(129))),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/1025-byte label value", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), Labels: map[string]string{"team": long(1025)}}, `labels["team"]`),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/129-byte key", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), IdempotencyKey: long(129)}, "idempotency_key"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/key reused with another shape", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: with(func(s *ledgerdv1.Shape) { s.Parts = cpu(2) }), IdempotencyKey: keyHold}, "idempotency_key"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/key reused with another ttl", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), HoldTtl: dur(time.Minute), IdempotencyKey: keyHold}, "idempotency_key"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/key of a reserve", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: good(), IdempotencyKey: keyReserve}, "idempotency_key"),
		call[ledgerdv1.ReserveRequest, ledgerdv1.ReserveResponse]("Reserve/key reused with another shape", rsv+"Reserve", acme, &ledgerdv1.ReserveRequest{Shape: with(func(s *ledgerdv1.Shape) { s.Duration = dur(2 * time.Hour) }), IdempotencyKey: keyReserve}, "idempotency_key"),
		call[ledgerdv1.ReserveRequest, ledgerdv1.ReserveResponse]("Reserve/key reused with labels", rsv+"Reserve", acme, &ledgerdv1.ReserveRequest{Shape: good(), Labels: map[string]string{"a": "b"}, IdempotencyKey: keyReserve}, "idempotency_key"),
		call[ledgerdv1.ReserveRequest, ledgerdv1.ReserveResponse]("Reserve/65 labels", rsv+"Reserve", acme, &ledgerdv1.ReserveRequest{Shape: good(), Labels: labels(65)}, "labels"),
	)

	// Lifecycle calls by id.
	type idCall struct {
		name string
		mk   func(id, key string) badCase
	}
	ids := []idCall{
		{"Commit", func(id, key string) badCase {
			return call[ledgerdv1.CommitRequest, ledgerdv1.CommitResponse]("", rsv+"Commit", acme, &ledgerdv1.CommitRequest{Id: id, IdempotencyKey: key}, "")
		}},
		{"Abort", func(id, key string) badCase {
			return call[ledgerdv1.AbortRequest, ledgerdv1.AbortResponse]("", rsv+"Abort", acme, &ledgerdv1.AbortRequest{Id: id, IdempotencyKey: key}, "")
		}},
		{"Cancel", func(id, key string) badCase {
			return call[ledgerdv1.CancelRequest, ledgerdv1.CancelResponse]("", rsv+"Cancel", acme, &ledgerdv1.CancelRequest{Id: id, IdempotencyKey: key}, "")
		}},
		{"Complete", func(id, key string) badCase {
			return call[ledgerdv1.CompleteRequest, ledgerdv1.CompleteResponse]("", rsv+"Complete", acme, &ledgerdv1.CompleteRequest{Id: id, IdempotencyKey: key}, "")
		}},
		{"Get", func(id, _ string) badCase {
			return call[ledgerdv1.GetRequest, ledgerdv1.GetResponse]("", rsv+"Get", acme, &ledgerdv1.GetRequest{Id: id}, "")
		}},
	}
	for _, ic := range ids {
		for _, o := range append([]struct{ name, s string }{{"empty", ""}}, oddNames[:6]...) {
			c := ic.mk(o.s, "")
			c.name, c.field = ic.name+"/id "+o.name, "id"
			add(c)
		}
		if ic.name == "Get" {
			continue
		}
		c := ic.mk("r-1", long(129))
		c.name, c.field = ic.name+"/129-byte key", "idempotency_key"
		add(c)
		// The key of the hold, sent with a lifecycle call of another
		// reservation (the Cancel of Y with X's key).
		c = ic.mk("some-other-id", keyHold)
		c.name, c.field = ic.name+"/key of a hold", "idempotency_key"
		add(c)
	}
	add(
		call[ledgerdv1.CancelRequest, ledgerdv1.CancelResponse]("Cancel/key reused for another id", rsv+"Cancel", acme, &ledgerdv1.CancelRequest{Id: "another-id", IdempotencyKey: keyCancel}, "idempotency_key"),
		call[ledgerdv1.CompleteRequest, ledgerdv1.CompleteResponse]("Complete/bad at", rsv+"Complete", acme, &ledgerdv1.CompleteRequest{Id: "x", At: &timestamppb.Timestamp{Nanos: -1}}, "at"),
		call[ledgerdv1.CompleteRequest, ledgerdv1.CompleteResponse]("Complete/at before 1970", rsv+"Complete", acme, &ledgerdv1.CompleteRequest{Id: "x", At: &timestamppb.Timestamp{Seconds: -1}}, "at"),
		call[ledgerdv1.CompleteRequest, ledgerdv1.CompleteResponse]("Complete/at past 9999", rsv+"Complete", acme, &ledgerdv1.CompleteRequest{Id: "x", At: &timestamppb.Timestamp{Seconds: 253402300800}}, "at"),
		call[ledgerdv1.ModifyRequest, ledgerdv1.ModifyResponse]("Modify/empty id", rsv+"Modify", acme, &ledgerdv1.ModifyRequest{Shape: good()}, "id"),
		call[ledgerdv1.ModifyRequest, ledgerdv1.ModifyResponse]("Modify/id with a space", rsv+"Modify", acme, &ledgerdv1.ModifyRequest{Id: "a b", Shape: good()}, "id"),
		call[ledgerdv1.ModifyRequest, ledgerdv1.ModifyResponse]("Modify/zero ttl", rsv+"Modify", acme, &ledgerdv1.ModifyRequest{Id: "x", Shape: good(), HoldTtl: dur(0)}, "hold_ttl"),
		call[ledgerdv1.ModifyRequest, ledgerdv1.ModifyResponse]("Modify/ttl above 1h", rsv+"Modify", acme, &ledgerdv1.ModifyRequest{Id: "x", Shape: good(), HoldTtl: dur(3 * time.Hour)}, "hold_ttl"),
		call[ledgerdv1.ModifyRequest, ledgerdv1.ModifyResponse]("Modify/key of a hold", rsv+"Modify", acme, &ledgerdv1.ModifyRequest{Id: "x", Shape: good(), IdempotencyKey: keyHold}, "idempotency_key"),
	)

	// Reads.
	add(
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/negative page_size", rsv+"List", acme, &ledgerdv1.ListRequest{PageSize: -1}, "page_size"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/unknown state", rsv+"List", acme, &ledgerdv1.ListRequest{States: []ledgerdv1.ReservationState{99}}, "states[0]"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/unspecified state", rsv+"List", acme, &ledgerdv1.ListRequest{States: []ledgerdv1.ReservationState{1, 0}}, "states[1]"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/bad from", rsv+"List", acme, &ledgerdv1.ListRequest{From: &timestamppb.Timestamp{Nanos: 1e9}}, "from"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/to before from", rsv+"List", acme, &ledgerdv1.ListRequest{From: at(time.Hour), To: at(0)}, "to"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/to before 1970", rsv+"List", acme, &ledgerdv1.ListRequest{To: &timestamppb.Timestamp{Seconds: -1}}, "to"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/257-byte page token", rsv+"List", acme, &ledgerdv1.ListRequest{PageToken: long(257)}, "page_token"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/malformed page token", rsv+"List", acme, &ledgerdv1.ListRequest{PageToken: "!!"}, "page_token"),
		call[ledgerdv1.OffersRequest, ledgerdv1.OffersResponse]("Offers/negative max_offers", rsv+"Offers", acme, &ledgerdv1.OffersRequest{Shape: good(), MaxOffers: -1}, "max_offers"),
		call[ledgerdv1.OffersRequest, ledgerdv1.OffersResponse]("Offers/101 offers", rsv+"Offers", acme, &ledgerdv1.OffersRequest{Shape: good(), MaxOffers: 101}, "max_offers"),
		call[ledgerdv1.AvailabilityRequest, ledgerdv1.AvailabilityResponse]("Availability/no to", rsv+"Availability", acme, &ledgerdv1.AvailabilityRequest{Resource: "cpu"}, "to"),
		call[ledgerdv1.AvailabilityRequest, ledgerdv1.AvailabilityResponse]("Availability/to before from", rsv+"Availability", acme, &ledgerdv1.AvailabilityRequest{Resource: "cpu", From: at(time.Hour), To: at(time.Minute)}, "to"),
		call[ledgerdv1.AvailabilityRequest, ledgerdv1.AvailabilityResponse]("Availability/bad from", rsv+"Availability", acme, &ledgerdv1.AvailabilityRequest{Resource: "cpu", From: &timestamppb.Timestamp{Nanos: -1}, To: at(time.Hour)}, "from"),
		call[ledgerdv1.AvailabilityRequest, ledgerdv1.AvailabilityResponse]("Availability/to past 9999", rsv+"Availability", acme, &ledgerdv1.AvailabilityRequest{Resource: "cpu", To: &timestamppb.Timestamp{Seconds: 253402300800}}, "to"),
		call[ledgerdv1.HistoryRequest, ledgerdv1.HistoryResponse]("History/negative limit", rsv+"History", acme, &ledgerdv1.HistoryRequest{Limit: -1}, "limit"),
		call[ledgerdv1.HistoryRequest, ledgerdv1.HistoryResponse]("History/129-byte reservation_id", rsv+"History", acme, &ledgerdv1.HistoryRequest{ReservationId: long(129)}, "reservation_id"),
	)
	for _, o := range append([]struct{ name, s string }{{"empty", ""}}, oddNames[:5]...) {
		add(call[ledgerdv1.AvailabilityRequest, ledgerdv1.AvailabilityResponse]("Availability/resource "+o.name, rsv+"Availability", acme, &ledgerdv1.AvailabilityRequest{Resource: o.s, To: at(time.Hour)}, "resource"))
	}

	// Variable jobs and co-reservations.
	job := func(f func(j *ledgerdv1.SubmitJobRequest)) *ledgerdv1.SubmitJobRequest {
		j := &ledgerdv1.SubmitJobRequest{Resource: "cpu", Amount: 1, Duration: dur(time.Hour)}
		f(j)
		return j
	}
	for _, jc := range []struct {
		name  string
		req   *ledgerdv1.SubmitJobRequest
		field string
	}{
		{"reserved id prefix", job(func(j *ledgerdv1.SubmitJobRequest) { j.Id = "r-1" }), "id"},
		{"id with a space", job(func(j *ledgerdv1.SubmitJobRequest) { j.Id = "a b" }), "id"},
		{"129-byte id", job(func(j *ledgerdv1.SubmitJobRequest) { j.Id = long(129) }), "id"},
		{"no resource", job(func(j *ledgerdv1.SubmitJobRequest) { j.Resource = "" }), "resource"},
		{"resource with a NUL", job(func(j *ledgerdv1.SubmitJobRequest) { j.Resource = "a\x00" }), "resource"},
		{"zero amount", job(func(j *ledgerdv1.SubmitJobRequest) { j.Amount = 0 }), "amount"},
		{"no duration", job(func(j *ledgerdv1.SubmitJobRequest) { j.Duration = nil }), "duration"},
		{"year 9999", job(func(j *ledgerdv1.SubmitJobRequest) { j.NotBefore, j.Duration = late, dur(2*time.Hour) }), "duration"},
		{"bad not_before", job(func(j *ledgerdv1.SubmitJobRequest) { j.NotBefore = &timestamppb.Timestamp{Seconds: -1} }), "not_before"},
		{"65 labels", job(func(j *ledgerdv1.SubmitJobRequest) { j.Labels = labels(65) }), "labels"},
		{"129-byte key", job(func(j *ledgerdv1.SubmitJobRequest) { j.IdempotencyKey = long(129) }), "idempotency_key"},
		{"key of a hold", job(func(j *ledgerdv1.SubmitJobRequest) { j.IdempotencyKey = keyHold }), "idempotency_key"},
	} {
		add(call[ledgerdv1.SubmitJobRequest, ledgerdv1.SubmitJobResponse]("SubmitJob/"+jc.name, rsv+"SubmitJob", acme, jc.req, jc.field))
	}
	co := func(f func(c *ledgerdv1.CoReserveRequest)) *ledgerdv1.CoReserveRequest {
		c := &ledgerdv1.CoReserveRequest{Candidates: []string{"cpu"}, Subs: []*ledgerdv1.CoSubRequest{{Amount: 1, Start: at(time.Hour), Duration: dur(time.Hour)}}}
		f(c)
		return c
	}
	for _, cc := range []struct {
		name  string
		req   *ledgerdv1.CoReserveRequest
		field string
	}{
		{"no subs", co(func(c *ledgerdv1.CoReserveRequest) { c.Subs = nil }), "subs"},
		{"no candidates", co(func(c *ledgerdv1.CoReserveRequest) { c.Candidates = nil }), "candidates"},
		{"min_joint above 1000", co(func(c *ledgerdv1.CoReserveRequest) { c.MinJointPermille = 1001 }), "min_joint_permille"},
		{"zero amount", co(func(c *ledgerdv1.CoReserveRequest) { c.Subs[0].Amount = 0 }), "subs[0].amount"},
		{"no start", co(func(c *ledgerdv1.CoReserveRequest) { c.Subs[0].Start = nil }), "subs[0].start"},
		{"no duration", co(func(c *ledgerdv1.CoReserveRequest) { c.Subs[0].Duration = nil }), "subs[0].duration"},
		{"year 9999", co(func(c *ledgerdv1.CoReserveRequest) { c.Subs[0].Start, c.Subs[0].Duration = late, dur(2*time.Hour) }), "subs[0].duration"},
		{"empty candidate", co(func(c *ledgerdv1.CoReserveRequest) { c.Candidates = []string{""} }), "candidates[0]"},
		{"candidate twice", co(func(c *ledgerdv1.CoReserveRequest) { c.Candidates = []string{"cpu", "cpu"} }), "candidates[1]"},
		{"reserved id prefix", co(func(c *ledgerdv1.CoReserveRequest) { c.Id = "r-5" }), "id"},
		{"65 labels", co(func(c *ledgerdv1.CoReserveRequest) { c.Labels = labels(65) }), "labels"},
		{"65 subs", co(func(c *ledgerdv1.CoReserveRequest) {
			for range 64 {
				c.Subs = append(c.Subs, c.Subs[0])
			}
		}), "subs"},
	} {
		add(call[ledgerdv1.CoReserveRequest, ledgerdv1.CoReserveResponse]("CoReserve/"+cc.name, rsv+"CoReserve", acme, cc.req, cc.field))
	}

	// Standing reservations: the rule, the zone, the horizon and COUNT
	// each name their field.
	rs := func(f func(r *ledgerdv1.ReserveSeriesRequest)) *ledgerdv1.ReserveSeriesRequest {
		r := &ledgerdv1.ReserveSeriesRequest{Id: "lab", Parts: cpu(1), Duration: dur(time.Hour), Repeat: "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20", Tz: "Europe/Berlin"}
		f(r)
		return r
	}
	for _, sc := range []struct {
		name  string
		req   *ledgerdv1.ReserveSeriesRequest
		field string
	}{
		{"bad RRULE", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Repeat = "FREQ=WEEKLY;BYHOUR=25" }), "repeat"},
		{"RRULE without FREQ", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Repeat = "BYDAY=MO" }), "repeat"},
		{"SECONDLY", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Repeat = "FREQ=SECONDLY;COUNT=3" }), "repeat"},
		{"unknown zone", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Tz = "Europe/Berlinn" }), "tz"},
		{"horizon too far", rs(func(r *ledgerdv1.ReserveSeriesRequest) {
			r.Repeat, r.Horizon = "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9", dur(400*24*time.Hour)
		}), "horizon"},
		{"horizon of a bounded series", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Horizon = dur(24 * time.Hour) }), "horizon"},
		{"COUNT too large", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Repeat = "FREQ=DAILY;COUNT=5000" }), "repeat"},
		{"overlapping itself", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Duration = dur(72 * time.Hour) }), "duration"},
		{"no duration", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Duration = nil }), "duration"},
		{"id with @", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Id = "lab@1" }), "id"},
		{"113-byte id", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Id = long(113) }), "id"},
		{"no parts", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Parts = nil }), "parts"},
		{"zero amount", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Parts = cpu(0) }), "parts[0].amount"},
		{"unknown conflict mode", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Conflicts = 9 }), "conflicts"},
		{"start before 1970", rs(func(r *ledgerdv1.ReserveSeriesRequest) { r.Start = &timestamppb.Timestamp{Seconds: -5} }), "start"},
	} {
		add(call[ledgerdv1.ReserveSeriesRequest, ledgerdv1.ReserveSeriesResponse]("ReserveSeries/"+sc.name, srs+"ReserveSeries", acme, sc.req, sc.field))
	}
	add(
		call[ledgerdv1.CancelSeriesRequest, ledgerdv1.CancelSeriesResponse]("CancelSeries/id with @", srs+"CancelSeries", acme, &ledgerdv1.CancelSeriesRequest{Id: "a@b"}, "id"),
		call[ledgerdv1.ModifySeriesRequest, ledgerdv1.ModifySeriesResponse]("ModifySeries/no from", srs+"ModifySeries", acme, &ledgerdv1.ModifySeriesRequest{Id: "lab", NewId: "lab2", Duration: dur(time.Hour)}, "from"),
		call[ledgerdv1.ModifySeriesRequest, ledgerdv1.ModifySeriesResponse]("ModifySeries/new rule", srs+"ModifySeries", acme, &ledgerdv1.ModifySeriesRequest{Id: "lab", NewId: "lab2", From: at(time.Hour), Repeat: "FREQ=DAILY"}, "repeat"),
		call[ledgerdv1.ModifySeriesRequest, ledgerdv1.ModifySeriesResponse]("ModifySeries/bad new id", srs+"ModifySeries", acme, &ledgerdv1.ModifySeriesRequest{Id: "lab", NewId: "a b", From: at(time.Hour)}, "new_id"),
		call[ledgerdv1.GetSeriesRequest, ledgerdv1.GetSeriesResponse]("GetSeries/empty id", srs+"GetSeries", acme, &ledgerdv1.GetSeriesRequest{}, "id"),
		call[ledgerdv1.ListRequest, ledgerdv1.ListResponse]("List/series id with a tab", rsv+"List", acme, &ledgerdv1.ListRequest{SeriesId: "a\tb"}, "series_id"),
	)

	// Batches: the first operation's error names the field.
	batch := func(ops ...*ledgerdv1.BatchOperation) *ledgerdv1.BatchRequest {
		return &ledgerdv1.BatchRequest{Operations: ops}
	}
	add(
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/hold with zero amount", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Hold{Hold: &ledgerdv1.HoldRequest{Shape: with(func(s *ledgerdv1.Shape) { s.Parts = cpu(0) })}}}), "shape.parts[0].amount"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/year 9999 reserve", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Reserve{Reserve: &ledgerdv1.ReserveRequest{Shape: with(func(s *ledgerdv1.Shape) { s.NotBefore, s.Duration = late, dur(2*time.Hour) })}}}), "shape.duration"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/commit without id", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Commit{Commit: &ledgerdv1.CommitRequest{}}}), "id"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/get of an odd id", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Get{Get: &ledgerdv1.GetRequest{Id: "a\tb"}}}), "id"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/modify with zero ttl", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Modify{Modify: &ledgerdv1.ModifyRequest{Id: "x", Shape: good(), HoldTtl: dur(0)}}}), "hold_ttl"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/cancel with a hold's key", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Cancel{Cancel: &ledgerdv1.CancelRequest{Id: "y", IdempotencyKey: keyHold}}}), "idempotency_key"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/abort with 129-byte key", rsv+"Batch", acme, batch(&ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Abort{Abort: &ledgerdv1.AbortRequest{Id: "y", IdempotencyKey: long(129)}}}), "idempotency_key"),
		call[ledgerdv1.BatchRequest, ledgerdv1.BatchResponse]("Batch/257 operations", rsv+"Batch", acme, batch(func() []*ledgerdv1.BatchOperation {
			out := make([]*ledgerdv1.BatchOperation, 257)
			for i := range out {
				out[i] = &ledgerdv1.BatchOperation{Op: &ledgerdv1.BatchOperation_Get{Get: &ledgerdv1.GetRequest{Id: "x"}}}
			}
			return out
		}()...), "operations"),
	)

	// Resources (operator calls).
	res := func(f func(r *ledgerdv1.Resource)) *ledgerdv1.CreateRequest {
		r := &ledgerdv1.Resource{Name: "newres", Capacity: 10}
		f(r)
		return &ledgerdv1.CreateRequest{Resource: r}
	}
	add(
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/no resource", rsc+"Create", ops, &ledgerdv1.CreateRequest{}, "resource"),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/zero capacity", rsc+"Create", ops, res(func(r *ledgerdv1.Resource) { r.Capacity = 0 }), "resource.capacity"),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/negative capacity", rsc+"Create", ops, res(func(r *ledgerdv1.Resource) { r.Capacity = -1 << 63 }), "resource.capacity"),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/65-byte unit", rsc+"Create", ops, res(func(r *ledgerdv1.Resource) { r.Unit = long(65) }), "resource.unit"),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/65 labels", rsc+"Create", ops, res(func(r *ledgerdv1.Resource) { r.Labels = labels(65) }), "resource.labels"),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/1025-byte label", rsc+"Create", ops, res(func(r *ledgerdv1.Resource) { r.Labels = map[string]string{"k": long(1025)} }), `resource.labels["k"]`),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/v* above 1000", rsc+"Create", ops, res(func(r *ledgerdv1.Resource) {
			r.Policy, r.MinSuccessPermille = ledgerdv1.Policy_POLICY_RELAXED, 1001
		}), "resource.min_success_permille"),
		call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/key reused", rsc+"Create", ops, &ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "other", Capacity: 1}, IdempotencyKey: keyCreate}, "idempotency_key"),
		call[ledgerdv1.UpdateCapacityRequest, ledgerdv1.UpdateCapacityResponse]("UpdateCapacity/no name", rsc+"UpdateCapacity", ops, &ledgerdv1.UpdateCapacityRequest{Capacity: 1}, "name"),
		call[ledgerdv1.UpdateCapacityRequest, ledgerdv1.UpdateCapacityResponse]("UpdateCapacity/name with a space", rsc+"UpdateCapacity", ops, &ledgerdv1.UpdateCapacityRequest{Name: "c p u", Capacity: 1}, "name"),
		call[ledgerdv1.UpdateCapacityRequest, ledgerdv1.UpdateCapacityResponse]("UpdateCapacity/negative capacity", rsc+"UpdateCapacity", ops, &ledgerdv1.UpdateCapacityRequest{Name: "cpu", Capacity: -1}, "capacity"),
		call[ledgerdv1.UpdateCapacityRequest, ledgerdv1.UpdateCapacityResponse]("UpdateCapacity/bad from", rsc+"UpdateCapacity", ops, &ledgerdv1.UpdateCapacityRequest{Name: "cpu", Capacity: 1, From: &timestamppb.Timestamp{Nanos: -1}}, "from"),
		call[ledgerdv1.UpdateCapacityRequest, ledgerdv1.UpdateCapacityResponse]("UpdateCapacity/to before from", rsc+"UpdateCapacity", ops, &ledgerdv1.UpdateCapacityRequest{Name: "cpu", Capacity: 1, From: at(time.Hour), To: at(time.Minute)}, "to"),
		call[ledgerdv1.UpdateCapacityRequest, ledgerdv1.UpdateCapacityResponse]("UpdateCapacity/to past 9999", rsc+"UpdateCapacity", ops, &ledgerdv1.UpdateCapacityRequest{Name: "cpu", Capacity: 1, To: &timestamppb.Timestamp{Seconds: 253402300800}}, "to"),
		call[ledgerdv1.SetPolicyRequest, ledgerdv1.SetPolicyResponse]("SetPolicy/no name", rsc+"SetPolicy", ops, &ledgerdv1.SetPolicyRequest{}, "name"),
		call[ledgerdv1.SetPolicyRequest, ledgerdv1.SetPolicyResponse]("SetPolicy/unknown policy", rsc+"SetPolicy", ops, &ledgerdv1.SetPolicyRequest{Name: "cpu", Policy: 99}, "policy"),
		call[ledgerdv1.SetPolicyRequest, ledgerdv1.SetPolicyResponse]("SetPolicy/v* above 1000", rsc+"SetPolicy", ops, &ledgerdv1.SetPolicyRequest{Name: "cpu", Policy: ledgerdv1.Policy_POLICY_RELAXED, MinSuccessPermille: 1001}, "min_success_permille"),
		call[ledgerdv1.SetPolicyRequest, ledgerdv1.SetPolicyResponse]("SetPolicy/v* for reject", rsc+"SetPolicy", ops, &ledgerdv1.SetPolicyRequest{Name: "cpu", MinSuccessPermille: 500}, "min_success_permille"),
		call[ledgerdv1.SetPolicyRequest, ledgerdv1.SetPolicyResponse]("SetPolicy/pushes above 1000", rsc+"SetPolicy", ops, &ledgerdv1.SetPolicyRequest{Name: "cpu", Policy: ledgerdv1.Policy_POLICY_MOVE_VARIABLE, MaxPushes: 1001}, "max_pushes"),
	)
	for _, o := range append([]struct{ name, s string }{{"empty", ""}}, oddNames...) {
		add(call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/name "+o.name, rsc+"Create", ops, res(func(r *ledgerdv1.Resource) { r.Name = o.s }), "resource.name"))
		add(call[ledgerdv1.DeleteRequest, ledgerdv1.DeleteResponse]("Delete/name "+o.name, rsc+"Delete", ops, &ledgerdv1.DeleteRequest{Name: o.s, Force: true}, "name"))
	}
	add(tenantBadCases(ops, acme)...)
	add(changeUnitsBadCases(ops)...)
	return cs
}

// changeUnitsBadCases are the bad unit changes: hostlists, names the
// resource has or lacks, a resource without units, nothing to do, every
// unit removed. TestBadRequests creates "rack" with units r1..r4.
func changeUnitsBadCases(ops string) []badCase {
	cu := func(name string, m *ledgerdv1.ChangeUnitsRequest, field string) badCase {
		return call[ledgerdv1.ChangeUnitsRequest, ledgerdv1.ChangeUnitsResponse]("ChangeUnits/"+name, rsc+"ChangeUnits", ops, m, field)
	}
	return []badCase{
		cu("no name", &ledgerdv1.ChangeUnitsRequest{Add: "r5"}, "name"),
		cu("nothing", &ledgerdv1.ChangeUnitsRequest{Name: "rack"}, "add"),
		cu("add hostlist without ]", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Add: "r[5-"}, "add"),
		cu("remove hostlist backwards", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Remove: "r[3-1]"}, "remove"),
		cu("add a unit it has", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Add: "r[4-5]"}, "add[0]"),
		cu("remove a unit it lacks", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Remove: "r1,r9"}, "remove[1]"),
		cu("add and remove one unit", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Add: "r7", Remove: "r7"}, "remove[0]"),
		cu("unit name 65 bytes", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Add: "x0123456789012345678901234567890123456789012345678901234567890123"}, "add[0]"),
		cu("every unit removed", &ledgerdv1.ChangeUnitsRequest{Name: "rack", Remove: "r[1-4]"}, "remove"),
		cu("resource without units", &ledgerdv1.ChangeUnitsRequest{Name: "cpu", Add: "r5"}, "name"),
	}
}

// TestBadRequests sends every bad request over plain JSON, Connect and
// gRPC and checks that each is refused with InvalidArgument naming the
// exact field, and that the ledger (every state's List, the resources,
// the history) is byte for byte what it was.
func TestBadRequests(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	now := s.Clock.Now()

	// The requests whose keys the cases reuse, and rows for the reads.
	good := &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}}, Duration: durationpb.New(time.Hour), NotBefore: timestamppb.New(now.Add(time.Hour))}
	must[*connect.Response[ledgerdv1.HoldResponse]](t)(acme.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: good, IdempotencyKey: keyHold})))
	r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: good, IdempotencyKey: keyReserve})))
	must[*connect.Response[ledgerdv1.CancelResponse]](t)(acme.res.Cancel(ctx, connect.NewRequest(&ledgerdv1.CancelRequest{Id: r.Msg.Reservation.Id, IdempotencyKey: keyCancel})))
	must[*connect.Response[ledgerdv1.CreateResponse]](t)(ops.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "lab", Capacity: 3}, IdempotencyKey: keyCreate})))
	must[*connect.Response[ledgerdv1.CreateResponse]](t)(ops.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "rack"}, Nodes: "r[1-4]"})))
	must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: good, Labels: map[string]string{"team": "physics"}})))

	cases := append(badCases(now), unitBadCases(now)...)
	distinct := map[string]bool{}
	for _, c := range cases {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.msg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		distinct[c.proc+"\x00"+string(b)] = true
	}
	if len(distinct) < 150 || len(distinct) != len(cases) {
		t.Fatalf("%d cases, %d distinct requests: want at least 150, all distinct", len(cases), len(distinct))
	}
	t.Logf("%d distinct bad requests × 3 protocols", len(cases))

	before := ledgerState(t, ops)
	protocols := []struct {
		name string
		opts []connect.ClientOption
	}{
		{"connect", nil},
		{"grpc", []connect.ClientOption{connect.WithGRPC()}},
	}
	var binaryOnly int
	for _, c := range cases {
		if _, err := protojson.Marshal(c.msg); err != nil {
			// A Timestamp or Duration out of its range has no JSON
			// form: only binary clients can send it.
			binaryOnly++
		}
	}
	t.Logf("%d of them have no JSON form (a Timestamp or Duration out of range) and go over Connect and gRPC only", binaryOnly)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := protojson.Marshal(c.msg); err == nil {
				field, code, err := sendJSON(ctx, s.URLs[0], c)
				if err != nil {
					t.Fatalf("json: %v", err)
				}
				if code != connect.CodeInvalidArgument || field != c.field {
					t.Errorf("json: %s naming %q, want invalid_argument naming %q", code, field, c.field)
				}
			}
			for _, p := range protocols {
				opts := append([]connect.ClientOption{connect.WithInterceptors(bearer(c.token))}, p.opts...)
				resp, err := c.send(ctx, s.URLs[0], opts)
				if br, ok := resp.(*ledgerdv1.BatchResponse); ok && err == nil {
					err = batchErr(br)
				}
				got, _ := rpc.BadField(err)
				if connect.CodeOf(err) != connect.CodeInvalidArgument || got != c.field {
					t.Errorf("%s: %v naming %q, want InvalidArgument naming %q", p.name, err, got, c.field)
				}
			}
		})
	}
	if after := ledgerState(t, ops); !bytes.Equal(before, after) {
		t.Fatalf("the bad requests changed the ledger:\nbefore %s\nafter  %s", before, after)
	}
}

// batchErr returns the first operation's error of a batch as a
// *connect.Error with its details.
func batchErr(br *ledgerdv1.BatchResponse) error {
	if len(br.GetResults()) == 0 || br.GetResults()[0].GetError() == nil {
		return nil
	}
	be := br.GetResults()[0].GetError()
	e := connect.NewError(connect.Code(be.GetCode()), fmt.Errorf("%s", be.GetMessage()))
	for _, d := range be.GetDetails() {
		m, err := d.UnmarshalNew()
		if err != nil {
			continue
		}
		if ed, err := connect.NewErrorDetail(m); err == nil {
			e.AddDetail(ed)
		}
	}
	return e
}

// sendJSON posts c as plain JSON and returns the code and the field the
// error's BadRequest detail names (for a batch, its first operation's).
func sendJSON(ctx context.Context, url string, c badCase) (string, connect.Code, error) {
	body, err := protojson.Marshal(c.msg)
	if err != nil {
		return "", 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+c.proc, bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode == http.StatusOK {
		var br ledgerdv1.BatchResponse
		if !strings.HasSuffix(c.proc, "/Batch") || protojson.Unmarshal(b, &br) != nil {
			return "", 0, fmt.Errorf("accepted: %s", b)
		}
		err := batchErr(&br)
		f, _ := rpc.BadField(err)
		return f, connect.CodeOf(err), nil
	}
	var wire struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"details"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return "", 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	var code connect.Code
	if err := code.UnmarshalText([]byte(wire.Code)); err != nil {
		return "", 0, err
	}
	for _, d := range wire.Details {
		if d.Type != "google.rpc.BadRequest" {
			continue
		}
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(d.Value, "="))
		if err != nil {
			return "", 0, err
		}
		var br errdetails.BadRequest
		if err := proto.Unmarshal(raw, &br); err != nil {
			return "", 0, err
		}
		if len(br.FieldViolations) > 0 {
			return br.FieldViolations[0].Field, code, nil
		}
	}
	return "", code, nil
}

// ledgerState is every state's List, the resources and the whole
// history, as the operator reads them, deterministically encoded (as
// text, so that a difference can be read).
func ledgerState(t *testing.T, ops api) []byte {
	t.Helper()
	ctx := context.Background()
	var out []byte
	enc := func(m proto.Message) {
		b, err := prototext.MarshalOptions{Multiline: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	for _, st := range slices.Sorted(maps.Keys(ledgerdv1.ReservationState_name)) {
		req := &ledgerdv1.ListRequest{PageSize: 1000}
		if st != 0 {
			req.States = []ledgerdv1.ReservationState{ledgerdv1.ReservationState(st)}
		}
		enc(must[*connect.Response[ledgerdv1.ListResponse]](t)(ops.res.List(ctx, connect.NewRequest(req))).Msg)
	}
	enc(must[*connect.Response[ledgerdv1.ResourceServiceListResponse]](t)(ops.rsc.List(ctx, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{}))).Msg)
	enc(must[*connect.Response[ledgerdv1.HistoryResponse]](t)(ops.res.History(ctx, connect.NewRequest(&ledgerdv1.HistoryRequest{Limit: 1000}))).Msg)
	return out
}
