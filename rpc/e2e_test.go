package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/fsm"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/rpc"
)

// api bundles the generated Connect clients of one server for one token.
type api struct {
	res ledgerdv1connect.ReservationServiceClient
	rsc ledgerdv1connect.ResourceServiceClient
	cl  ledgerdv1connect.ClusterServiceClient
}

type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if b != "" {
			req.Header().Set("Authorization", "Bearer "+string(b))
		}
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		c := next(ctx, spec)
		if b != "" {
			c.RequestHeader().Set("Authorization", "Bearer "+string(b))
		}
		return c
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func newAPI(url, token string, opts ...connect.ClientOption) api {
	opts = append(opts, connect.WithInterceptors(bearer(token)))
	return api{
		res: ledgerdv1connect.NewReservationServiceClient(http.DefaultClient, url, opts...),
		rsc: ledgerdv1connect.NewResourceServiceClient(http.DefaultClient, url, opts...),
		cl:  ledgerdv1connect.NewClusterServiceClient(http.DefaultClient, url, opts...),
	}
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func ts(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }

func shape(res string, amount int64, dur, notBefore, deadline time.Duration) *ledgerdv1.Shape {
	s := &ledgerdv1.Shape{
		Parts:     []*ledgerdv1.ResourceAmount{{Resource: res, Amount: amount}},
		Duration:  durationpb.New(dur),
		NotBefore: ts(notBefore),
	}
	if deadline > 0 {
		s.Deadline = ts(deadline)
	}
	return s
}

// newSite starts a site with auth and resources cpu (128) and gpu (8).
func newSite(t *testing.T, o agenttest.Options) (*agenttest.Site, api) {
	t.Helper()
	if o.API.Auth == nil {
		o.API.Auth = agenttest.NewAuth(t)
	}
	s := agenttest.NewSite(t, o)
	ops := newAPI(s.URLs[0], agenttest.TokenOps)
	for _, r := range []*ledgerdv1.Resource{{Name: "cpu", Capacity: 128, Unit: "cores"}, {Name: "gpu", Capacity: 8, Unit: "GPUs"}} {
		if _, err := ops.rsc.Create(context.Background(), connect.NewRequest(&ledgerdv1.CreateRequest{Resource: r})); err != nil {
			t.Fatalf("create %s: %v", r.Name, err)
		}
	}
	return s, ops
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestLifecycleOverConnect(t *testing.T) {
	ctx := context.Background()
	s, _ := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)

	// Two-phase: hold, then commit.
	h := must[*connect.Response[ledgerdv1.HoldResponse]](t)(acme.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{
		Shape: shape("cpu", 100, time.Hour, time.Hour, 0), HoldTtl: durationpb.New(time.Minute),
	})))
	r := h.Msg.Reservation
	if r.State != ledgerdv1.ReservationState_RESERVATION_STATE_HELD || r.Tenant != "acme" || !r.Start.AsTime().Equal(t0.Add(time.Hour)) {
		t.Fatalf("hold = %v", r)
	}
	c := must[*connect.Response[ledgerdv1.CommitResponse]](t)(acme.res.Commit(ctx, connect.NewRequest(&ledgerdv1.CommitRequest{Id: r.Id})))
	if c.Msg.Reservation.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("commit = %v", c.Msg.Reservation)
	}

	// One-phase reserve lands after the first booking (only 28 cores left).
	rv := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{
		Shape: shape("cpu", 64, time.Hour, time.Hour, 0),
	})))
	if got := rv.Msg.Reservation.Start.AsTime(); !got.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("reserve start = %v, want %v", got, t0.Add(2*time.Hour))
	}

	// Find and Offers agree with the schedule.
	f := must[*connect.Response[ledgerdv1.FindResponse]](t)(acme.res.Find(ctx, connect.NewRequest(&ledgerdv1.FindRequest{Shape: shape("cpu", 128, time.Hour, 0, 0)})))
	if !f.Msg.Fits || !f.Msg.Start.AsTime().Equal(t0) {
		t.Fatalf("find = %v", f.Msg)
	}
	o := must[*connect.Response[ledgerdv1.OffersResponse]](t)(acme.res.Offers(ctx, connect.NewRequest(&ledgerdv1.OffersRequest{Shape: shape("cpu", 64, time.Hour, time.Hour, 0), MaxOffers: 3})))
	if len(o.Msg.Offers) < 2 || !o.Msg.Offers[0].Start.AsTime().Equal(t0.Add(2*time.Hour)) || !o.Msg.Offers[1].Start.AsTime().After(o.Msg.Offers[0].Start.AsTime()) {
		t.Fatalf("offers = %v", o.Msg)
	}

	// Availability: 128 free now, 28 during the first hour, 64 during the second.
	av := must[*connect.Response[ledgerdv1.AvailabilityResponse]](t)(acme.res.Availability(ctx, connect.NewRequest(&ledgerdv1.AvailabilityRequest{Resource: "cpu", From: ts(0), To: ts(4 * time.Hour)})))
	var steps []string
	for _, b := range av.Msg.Blocks {
		steps = append(steps, fmt.Sprintf("%s-%s:%d", b.Start.AsTime().Sub(t0), b.End.AsTime().Sub(t0), b.Free))
	}
	if got, want := strings.Join(steps, " "), "0s-1h0m0s:128 1h0m0s-2h0m0s:28 2h0m0s-3h0m0s:64 3h0m0s-4h0m0s:128"; got != want {
		t.Fatalf("availability = %s, want %s", got, want)
	}

	// Modify (PluS two-phase): the new shape is held beside the old one;
	// abort keeps the original, commit swaps.
	m := must[*connect.Response[ledgerdv1.ModifyResponse]](t)(acme.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{
		Id: r.Id, Shape: shape("cpu", 100, 2*time.Hour, 5*time.Hour, 0),
	})))
	if m.Msg.Reservation.Pending == nil || !m.Msg.Reservation.Pending.Start.AsTime().Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("modify = %v", m.Msg.Reservation)
	}
	ab := must[*connect.Response[ledgerdv1.AbortResponse]](t)(acme.res.Abort(ctx, connect.NewRequest(&ledgerdv1.AbortRequest{Id: r.Id})))
	if ab.Msg.Reservation.Pending != nil || ab.Msg.Reservation.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED || !ab.Msg.Reservation.Start.AsTime().Equal(t0.Add(time.Hour)) {
		t.Fatalf("abort of modification lost the original: %v", ab.Msg.Reservation)
	}
	must[*connect.Response[ledgerdv1.ModifyResponse]](t)(acme.res.Modify(ctx, connect.NewRequest(&ledgerdv1.ModifyRequest{Id: r.Id, Shape: shape("cpu", 100, 2*time.Hour, 5*time.Hour, 0)})))
	sw := must[*connect.Response[ledgerdv1.CommitResponse]](t)(acme.res.Commit(ctx, connect.NewRequest(&ledgerdv1.CommitRequest{Id: r.Id})))
	if !sw.Msg.Reservation.Start.AsTime().Equal(t0.Add(5*time.Hour)) || !sw.Msg.Reservation.End.AsTime().Equal(t0.Add(7*time.Hour)) {
		t.Fatalf("commit of modification = %v", sw.Msg.Reservation)
	}

	// Cancel, then Get shows the state.
	must[*connect.Response[ledgerdv1.CancelResponse]](t)(acme.res.Cancel(ctx, connect.NewRequest(&ledgerdv1.CancelRequest{Id: rv.Msg.Reservation.Id})))
	g := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: rv.Msg.Reservation.Id})))
	if g.Msg.Reservation.State != ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED {
		t.Fatalf("get after cancel = %v", g.Msg.Reservation)
	}
}

func TestRejectionCarriesEarliestStart(t *testing.T) {
	ctx := context.Background()
	s, _ := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 8, 2*time.Hour, 0, 0)})))
	_, err := acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 1, time.Hour, 0, 90*time.Minute)}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("code = %v (%v), want FailedPrecondition", connect.CodeOf(err), err)
	}
	rej, ok := rpc.Rejection(err)
	if !ok || rej.Reason != rpc.ReasonNoCapacity || rej.EarliestStart == nil || !rej.EarliestStart.AsTime().Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("rejection detail = %v, %v", rej, ok)
	}
	var info *errdetails.ErrorInfo
	for _, d := range err.(*connect.Error).Details() {
		if v, _ := d.Value(); v != nil {
			if i, ok := v.(*errdetails.ErrorInfo); ok {
				info = i
			}
		}
	}
	if info == nil || info.Reason != rpc.ReasonNoCapacity || info.Metadata["earliest_start"] != "2030-01-01T02:00:00Z" {
		t.Fatalf("ErrorInfo = %v", info)
	}
}

func TestIdempotentRetryBooksOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	req := &ledgerdv1.ReserveRequest{Shape: shape("gpu", 3, time.Hour, 0, 0), IdempotencyKey: "k-1"}
	a := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(req)))
	b := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(req)))
	if a.Msg.Reservation.Id != b.Msg.Reservation.Id {
		t.Fatalf("retry booked again: %s vs %s", a.Msg.Reservation.Id, b.Msg.Reservation.Id)
	}
	l := must[*connect.Response[ledgerdv1.ListResponse]](t)(acme.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{})))
	if len(l.Msg.Reservations) != 1 {
		t.Fatalf("%d reservations after a retried reserve, want 1", len(l.Msg.Reservations))
	}
}

func TestListFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	globex := newAPI(s.URLs[0], agenttest.TokenGlobex)
	for i := range 7 {
		must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("cpu", 1, time.Hour, time.Duration(i)*time.Hour, 0)})))
	}
	must[*connect.Response[ledgerdv1.HoldResponse]](t)(globex.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: shape("gpu", 1, time.Hour, 0, 0)})))

	var ids []string
	token := ""
	for pages := 0; ; pages++ {
		p := must[*connect.Response[ledgerdv1.ListResponse]](t)(acme.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{PageSize: 3, PageToken: token})))
		for _, r := range p.Msg.Reservations {
			if r.Tenant != "acme" {
				t.Fatalf("acme sees %s's reservation", r.Tenant)
			}
			ids = append(ids, r.Id)
		}
		token = p.Msg.NextPageToken
		if token == "" {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if len(ids) != 7 {
		t.Fatalf("acme listed %d reservations, want 7", len(ids))
	}
	// Time-range filter: reservations intersecting [2h, 4h).
	p := must[*connect.Response[ledgerdv1.ListResponse]](t)(acme.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{From: ts(2 * time.Hour), To: ts(4 * time.Hour)})))
	if len(p.Msg.Reservations) != 2 {
		t.Fatalf("time filter gave %d, want 2", len(p.Msg.Reservations))
	}
	// State and resource filters (operator sees every tenant).
	p = must[*connect.Response[ledgerdv1.ListResponse]](t)(ops.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{Resource: "gpu", States: []ledgerdv1.ReservationState{ledgerdv1.ReservationState_RESERVATION_STATE_HELD}})))
	if len(p.Msg.Reservations) != 1 || p.Msg.Reservations[0].Tenant != "globex" {
		t.Fatalf("operator gpu/HELD list = %v", p.Msg.Reservations)
	}
	// A tenant asking for another tenant's list is refused.
	if _, err := acme.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{Tenant: "globex"})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("cross-tenant list: %v", err)
	}
}

// state is everything a client can observe, to prove a refused call changed nothing.
func state(t *testing.T, ops api) []byte {
	t.Helper()
	ctx := context.Background()
	l := must[*connect.Response[ledgerdv1.ListResponse]](t)(ops.res.List(ctx, connect.NewRequest(&ledgerdv1.ListRequest{PageSize: 1000})))
	r := must[*connect.Response[ledgerdv1.ResourceServiceListResponse]](t)(ops.rsc.List(ctx, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{})))
	b1, _ := proto.MarshalOptions{Deterministic: true}.Marshal(l.Msg)
	b2, _ := proto.MarshalOptions{Deterministic: true}.Marshal(r.Msg)
	return append(b1, b2...)
}

// refusal runs call and checks that it fails with code, naming field in a
// BadRequest detail when field is not empty, and leaves the ledger as it was.
func refusal(t *testing.T, ops api, call func() error, code connect.Code, field string) {
	t.Helper()
	before := state(t, ops)
	err := call()
	if got := connect.CodeOf(err); got != code {
		t.Fatalf("code = %v (%v), want %v", got, err, code)
	}
	if field != "" {
		if f, ok := rpc.BadField(err); !ok || f != field {
			t.Fatalf("field = %q (%v), want %q", f, ok, field)
		}
	}
	if after := state(t, ops); !bytes.Equal(before, after) {
		t.Fatal("a refused call changed the ledger")
	}
}

func TestBadInputs(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{API: rpc.Options{MaxRequestBytes: 4 << 10}})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	globex := newAPI(s.URLs[0], agenttest.TokenGlobex)
	anon := newAPI(s.URLs[0], "")
	held := must[*connect.Response[ledgerdv1.HoldResponse]](t)(globex.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: shape("gpu", 1, time.Hour, 0, 0)}))).Msg.Reservation

	hold := func(c api, sh *ledgerdv1.Shape) error {
		_, err := c.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: sh}))
		return err
	}
	big := map[string]string{}
	for i := range 30 {
		big[fmt.Sprintf("k%d", i)] = strings.Repeat("x", 250)
	}
	cases := []struct {
		name  string
		call  func() error
		code  connect.Code
		field string
	}{
		{"negative amount", func() error { return hold(acme, shape("cpu", -4, time.Hour, 0, 0)) }, connect.CodeInvalidArgument, "shape.parts[0].amount"},
		{"zero duration", func() error { return hold(acme, shape("cpu", 4, 0, 0, 0)) }, connect.CodeInvalidArgument, "shape.duration"},
		{"inverted window", func() error { return hold(acme, shape("cpu", 4, time.Hour, 5*time.Hour, 2*time.Hour)) }, connect.CodeInvalidArgument, "shape.deadline"},
		{"missing shape", func() error { return hold(acme, nil) }, connect.CodeInvalidArgument, "shape"},
		{"no parts", func() error {
			sh := shape("cpu", 1, time.Hour, 0, 0)
			sh.Parts = nil
			return hold(acme, sh)
		}, connect.CodeInvalidArgument, "shape.parts"},
		{"exact start and window", func() error {
			sh := shape("cpu", 1, time.Hour, 0, 0)
			sh.ExactStart = ts(time.Hour)
			return hold(acme, sh)
		}, connect.CodeInvalidArgument, "shape.exact_start"},
		{"exact start in the past", func() error {
			sh := &ledgerdv1.Shape{Parts: []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}}, Duration: durationpb.New(time.Hour), ExactStart: ts(-time.Hour)}
			return hold(acme, sh)
		}, connect.CodeInvalidArgument, "shape.exact_start"},
		{"unknown resource", func() error { return hold(acme, shape("tpu", 1, time.Hour, 0, 0)) }, connect.CodeNotFound, ""},
		{"negative ttl", func() error {
			_, err := acme.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: shape("cpu", 1, time.Hour, 0, 0), HoldTtl: durationpb.New(-time.Second)}))
			return err
		}, connect.CodeInvalidArgument, "hold_ttl"},
		{"oversized request", func() error {
			_, err := acme.res.Hold(ctx, connect.NewRequest(&ledgerdv1.HoldRequest{Shape: shape("cpu", 1, time.Hour, 0, 0), Labels: big}))
			return err
		}, connect.CodeResourceExhausted, ""},
		{"wrong tenant commits", func() error {
			_, err := acme.res.Commit(ctx, connect.NewRequest(&ledgerdv1.CommitRequest{Id: held.Id}))
			return err
		}, connect.CodePermissionDenied, ""},
		{"wrong tenant reads", func() error {
			_, err := acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: held.Id}))
			return err
		}, connect.CodePermissionDenied, ""},
		{"unknown id", func() error {
			_, err := acme.res.Cancel(ctx, connect.NewRequest(&ledgerdv1.CancelRequest{Id: "nope"}))
			return err
		}, connect.CodeNotFound, ""},
		{"missing token", func() error { return hold(anon, shape("cpu", 1, time.Hour, 0, 0)) }, connect.CodeUnauthenticated, ""},
		{"bad token", func() error { return hold(newAPI(s.URLs[0], "not-a-token"), shape("cpu", 1, time.Hour, 0, 0)) }, connect.CodeUnauthenticated, ""},
		{"tenant creates resource", func() error {
			_, err := acme.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "x", Capacity: 1}}))
			return err
		}, connect.CodePermissionDenied, ""},
		{"tenant calls cluster", func() error {
			_, err := acme.cl.Members(ctx, connect.NewRequest(&ledgerdv1.MembersRequest{}))
			return err
		}, connect.CodePermissionDenied, ""},
		{"negative capacity", func() error {
			_, err := ops.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "x", Capacity: -1}}))
			return err
		}, connect.CodeInvalidArgument, "resource.capacity"},
		{"duplicate resource", func() error {
			_, err := ops.rsc.Create(ctx, connect.NewRequest(&ledgerdv1.CreateRequest{Resource: &ledgerdv1.Resource{Name: "cpu", Capacity: 1}}))
			return err
		}, connect.CodeAlreadyExists, ""},
		{"delete resource in use", func() error {
			_, err := ops.rsc.Delete(ctx, connect.NewRequest(&ledgerdv1.DeleteRequest{Name: "gpu"}))
			return err
		}, connect.CodeFailedPrecondition, ""},
		{"inverted availability window", func() error {
			_, err := acme.res.Availability(ctx, connect.NewRequest(&ledgerdv1.AvailabilityRequest{Resource: "cpu", From: ts(time.Hour), To: ts(0)}))
			return err
		}, connect.CodeInvalidArgument, "to"},
		{"malformed JSON", func() error { return rawPost(s.URLs[0], "application/json", []byte(`{"shape": {`)) }, connect.CodeInvalidArgument, ""},
		{"malformed proto", func() error { return rawPost(s.URLs[0], "application/proto", []byte{0x0a, 0xff, 0xff, 0x01}) }, connect.CodeInvalidArgument, ""},
		{"unknown JSON field", func() error { return rawPost(s.URLs[0], "application/json", []byte(`{"bogus": 1}`)) }, connect.CodeInvalidArgument, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { refusal(t, ops, tc.call, tc.code, tc.field) })
	}
}

// rawPost sends a Connect unary Hold with the given body and returns the
// error the Connect protocol encodes in the response.
func rawPost(url, ct string, body []byte) error {
	req, _ := http.NewRequest(http.MethodPost, url+"/ledgerd.v1.ReservationService/Hold", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+agenttest.TokenAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &e)
	var c connect.Code
	if err := c.UnmarshalText([]byte(e.Code)); err != nil {
		return fmt.Errorf("status %d, body %s", resp.StatusCode, b)
	}
	return connect.NewError(c, errors.New(string(b)))
}

func TestHTTPJSONPost(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	body := `{"shape": {"parts": [{"resource": "cpu", "amount": "16"}], "duration": "3600s", "notBefore": "2030-01-01T01:00:00Z"}, "idempotencyKey": "json-1"}`
	req, _ := http.NewRequest(http.MethodPost, s.URLs[0]+"/ledgerd.v1.ReservationService/Reserve", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agenttest.TokenAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out struct {
		Reservation struct {
			ID    string `json:"id"`
			State string `json:"state"`
			Start string `json:"start"`
		} `json:"reservation"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Reservation.State != "RESERVATION_STATE_COMMITTED" || out.Reservation.Start != "2030-01-01T01:00:00Z" {
		t.Fatalf("JSON reserve = %s", b)
	}
}

func TestPlainGRPCClient(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	conn, err := grpc.NewClient(s.Addrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+agenttest.TokenAcme)

	out := new(ledgerdv1.ReserveResponse)
	if err := conn.Invoke(ctx, "/ledgerd.v1.ReservationService/Reserve", &ledgerdv1.ReserveRequest{Shape: shape("gpu", 2, time.Hour, time.Hour, 0)}, out); err != nil {
		t.Fatal(err)
	}
	if out.Reservation.State != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
		t.Fatalf("grpc reserve = %v", out.Reservation)
	}
	// Errors keep their code and details over gRPC.
	err = conn.Invoke(ctx, "/ledgerd.v1.ReservationService/Reserve", &ledgerdv1.ReserveRequest{Shape: shape("gpu", -1, time.Hour, 0, 0)}, out)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("grpc bad input: %v", err)
	}
	found := false
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && br.FieldViolations[0].Field == "shape.parts[0].amount" {
			found = true
		}
	}
	if !found {
		t.Fatalf("grpc status lacks the BadRequest detail: %v", st.Details())
	}
	// Health and reflection answer without credentials.
	hc := new(healthResp)
	if err := conn.Invoke(context.Background(), "/grpc.health.v1.Health/Check", &healthReq{}, hc, grpc.ForceCodecV2(rawCodec{})); err != nil {
		t.Fatalf("health: %v", err)
	}
	if !bytes.Equal(hc.b, []byte{0x08, 0x01}) { // status: SERVING
		t.Fatalf("health = %x, want SERVING", hc.b)
	}
}

// rawCodec passes bytes through, so the health check needs no generated code.
type rawCodec struct{}

type healthReq struct{}
type healthResp struct{ b []byte }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(nil)}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*healthResp).b = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

func TestGRPCWebAndConnectGRPCProtocols(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	for name, opt := range map[string]connect.ClientOption{"grpc-web": connect.WithGRPCWeb(), "connect-json": connect.WithProtoJSON()} {
		c := newAPI(s.URLs[0], agenttest.TokenAcme, opt)
		r, err := c.rsc.List(context.Background(), connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{}))
		if err != nil || len(r.Msg.Resources) != 2 {
			t.Fatalf("%s: list = %v, %v", name, r, err)
		}
	}
}

func TestCompactedHistoryIsOutOfRange(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{FSM: fsm.Config{HistoryLimit: 4}})
	for range 4 {
		if _, err := ops.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 1, time.Hour, time.Hour, 0)})); err != nil {
			t.Fatal(err)
		}
	}
	_, err := ops.res.History(ctx, connect.NewRequest(&ledgerdv1.HistoryRequest{FromVersion: 1}))
	if connect.CodeOf(err) != connect.CodeOutOfRange {
		t.Fatalf("history from 1: %v, want OutOfRange", err)
	}
	stream, err := ops.res.Watch(ctx, connect.NewRequest(&ledgerdv1.WatchRequest{FromVersion: 1}))
	if err == nil {
		for stream.Receive() {
			t.Fatal("watch from a compacted position delivered an event")
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodeOutOfRange {
		t.Fatalf("watch from 1: %v, want OutOfRange", err)
	}
	oldest := s.FSM.OldestVersion()
	h, err := ops.res.History(ctx, connect.NewRequest(&ledgerdv1.HistoryRequest{FromVersion: oldest}))
	if err != nil || len(h.Msg.Events) != 4 {
		t.Fatalf("history from the oldest retained version: %v, %v", h, err)
	}
}

func TestResourceCapacityWindowsAndDelete(t *testing.T) {
	ctx := context.Background()
	s, ops := newSite(t, agenttest.Options{})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	// Maintenance: gpu drops to 2 over [2h, 4h).
	if _, err := ops.rsc.UpdateCapacity(ctx, connect.NewRequest(&ledgerdv1.UpdateCapacityRequest{Name: "gpu", Capacity: 2, From: ts(2 * time.Hour), To: ts(4 * time.Hour)})); err != nil {
		t.Fatal(err)
	}
	av := must[*connect.Response[ledgerdv1.AvailabilityResponse]](t)(acme.res.Availability(ctx, connect.NewRequest(&ledgerdv1.AvailabilityRequest{Resource: "gpu", From: ts(0), To: ts(6 * time.Hour)})))
	var steps []string
	for _, b := range av.Msg.Blocks {
		steps = append(steps, fmt.Sprintf("%s:%d", b.Start.AsTime().Sub(t0), b.Free))
	}
	if got, want := strings.Join(steps, " "), "0s:8 2h0m0s:2 4h0m0s:8"; got != want {
		t.Fatalf("availability = %s, want %s", got, want)
	}
	// A booking of 4 GPUs that must overlap the window moves past it.
	r := must[*connect.Response[ledgerdv1.ReserveResponse]](t)(acme.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 4, time.Hour, 90*time.Minute, 0)})))
	if got := r.Msg.Reservation.Start.AsTime(); !got.Equal(t0.Add(4 * time.Hour)) {
		t.Fatalf("start = %v, want after the maintenance window", got)
	}
	// Draining the booked hour would overbook it: refused, nothing changes.
	before := state(t, ops)
	_, err := ops.rsc.UpdateCapacity(ctx, connect.NewRequest(&ledgerdv1.UpdateCapacityRequest{Name: "gpu", Capacity: 0, From: ts(4 * time.Hour), To: ts(5 * time.Hour)}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("overbooking capacity change: %v", err)
	}
	if !bytes.Equal(before, state(t, ops)) {
		t.Fatal("refused capacity change altered the ledger")
	}
	// Delete is refused while the booking lives, forced it releases it.
	if _, err := ops.rsc.Delete(ctx, connect.NewRequest(&ledgerdv1.DeleteRequest{Name: "gpu"})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("delete in use: %v", err)
	}
	if _, err := ops.rsc.Delete(ctx, connect.NewRequest(&ledgerdv1.DeleteRequest{Name: "gpu", Force: true})); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	g := must[*connect.Response[ledgerdv1.GetResponse]](t)(acme.res.Get(ctx, connect.NewRequest(&ledgerdv1.GetRequest{Id: r.Msg.Reservation.Id})))
	if g.Msg.Reservation.State != ledgerdv1.ReservationState_RESERVATION_STATE_CANCELLED {
		t.Fatalf("booking after forced delete: %v", g.Msg.Reservation.State)
	}
	l := must[*connect.Response[ledgerdv1.ResourceServiceListResponse]](t)(acme.rsc.List(ctx, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{})))
	if len(l.Msg.Resources) != 1 || l.Msg.Resources[0].Name != "cpu" {
		t.Fatalf("resources after delete: %v", l.Msg.Resources)
	}
}
