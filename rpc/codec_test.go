package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

func TestUnknownJSONField(t *testing.T) {
	hold := (&ledgerdv1.HoldRequest{}).ProtoReflect().Descriptor()
	batch := (&ledgerdv1.BatchRequest{}).ProtoReflect().Descriptor()
	for _, tc := range []struct {
		json, want string
	}{
		{`{"shape": {"notBefor": "2030-01-01T00:00:00Z"}}`, "shape.notBefor"},
		{`{"shape": {"not_before": "2030-01-01T00:00:00Z", "parts": [{"resource": "a"}, {"resourse": "b"}]}}`, "shape.parts[1].resourse"},
		{`{"idempotencyKey": "k", "idempotency_key": "k"}`, ""},
		{`{"labels": {"any": "thing"}, "holdTtl": "5s"}`, ""},
		{`{"id": "x"}`, "id"},
	} {
		got := unknownJSONField(hold, []byte(tc.json), "")
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.json, got, tc.want)
		}
	}
	if got := unknownJSONField(batch, []byte(`{"operations": [{"hold": {"shape": {}}}, {"cancel": {"id": "x", "reason": "y"}}]}`), ""); got != "operations[1].cancel.reason" {
		t.Errorf("batch: %q", got)
	}
}

// TestStrictJSONRefusesUnknownFields mounts the real handlers with the
// options Mount uses and StrictJSON, and sends plain JSON POSTs.
func TestStrictJSONRefusesUnknownFields(t *testing.T) {
	led := &stubLedger{}
	s, err := New(Options{Ledger: led, Now: func() time.Time { return time.UnixMilli(1_000_000) }})
	if err != nil {
		t.Fatal(err)
	}
	opts := append(StrictJSON(), connect.WithInterceptors(&authInterceptor{auth: s.opts.Auth, limit: s.limiter}, leaderHint(s.opts.LeaderHint)))
	mux := http.NewServeMux()
	mux.Handle(ledgerdv1connect.NewReservationServiceHandler(&reservations{s: s, l: led}, opts...))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(method, body string) (int, string) {
		resp, err := http.Post(srv.URL+"/ledgerd.v1.ReservationService/"+method, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("Hold", `{"shape": {"parts": [{"resource": "cpu", "amount": 1}], "duration": "60s", "notBefor": "2030-01-01T00:00:00Z"}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "shape.notBefor") || !strings.Contains(body, "invalid_argument") {
		t.Fatalf("typo in not_before: %d %s", code, body)
	}
	if led.holds != 0 {
		t.Fatal("the request with a typo reached the ledger")
	}
	code, body = post("History", `{"id": "r-1"}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `"field":"id"`) && !strings.Contains(body, "invalid id") {
		t.Fatalf("History with id: %d %s", code, body)
	}
	// Values protojson refuses name their field too.
	for body, field := range map[string]string{
		`{"shape": {"parts": [{"resource": "cpu", "amount": "many"}], "duration": "60s"}}`:                                  "shape.parts[0].amount",
		`{"shape": {"parts": [{"resource": "cpu", "amount": 1}], "duration": "60s", "notBefore": "10000-01-01T00:00:00Z"}}`: "shape.notBefore",
		`{"shape": {"parts": [{"resource": "cpu", "amount": 1}], "duration": "1e400s"}}`:                                    "shape.duration",
		`{"holdTtl": 5, "shape": {}}`: "holdTtl",
	} {
		code, got := post("Hold", body)
		if code != http.StatusBadRequest || !strings.Contains(got, `"field":"`+field+`"`) && !strings.Contains(got, "invalid "+field+":") {
			t.Errorf("%s: %d %s, want the field %s", body, code, got, field)
		}
	}
	// A correct request still goes through, in either spelling.
	code, body = post("Hold", `{"shape": {"parts": [{"resource": "cpu", "amount": 1}], "duration": "60s", "not_before": "2030-01-01T00:00:00Z"}}`)
	if code != http.StatusOK {
		t.Fatalf("good request: %d %s", code, body)
	}
	var out ledgerdv1.HoldResponse
	if err := protojson.Unmarshal(bytes.TrimSpace([]byte(body)), &out); err != nil {
		t.Fatal(err)
	}
}

// stubLedger answers Hold and History; everything else is unimplemented.
type stubLedger struct {
	ledger.Ledger
	holds  int
	getErr error
}

func (l *stubLedger) Hold(_ context.Context, a ledger.HoldArgs) (*ledgerdv1.Reservation, []*ledgerdv1.MovedJob, error) {
	l.holds++
	return &ledgerdv1.Reservation{Id: "r-1"}, nil, nil
}

// TestInternalErrorsAreLogged: an error the API can only answer with
// Internal is logged on Options.Logger with its cause.
func TestInternalErrorsAreLogged(t *testing.T) {
	var logs bytes.Buffer
	led := &stubLedger{getErr: errors.New("disk on fire")}
	s, err := New(Options{Ledger: led, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(ledgerdv1connect.NewReservationServiceHandler(&reservations{s: s, l: led},
		connect.WithInterceptors(&authInterceptor{auth: s.opts.Auth, limit: s.limiter}, leaderHint(s.opts.LeaderHint))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := ledgerdv1connect.NewReservationServiceClient(http.DefaultClient, srv.URL)
	_, err = c.Get(context.Background(), connect.NewRequest(&ledgerdv1.GetRequest{Id: "x"}))
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("Get: %v", err)
	}
	if !strings.Contains(logs.String(), "disk on fire") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("not logged: %q", logs.String())
	}
	// Errors with a code of their own are the caller's, not logged.
	logs.Reset()
	led.getErr = &ledger.FieldError{Field: "id", Reason: "bad"}
	if _, err := c.Get(context.Background(), connect.NewRequest(&ledgerdv1.GetRequest{Id: "x"})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Fatalf("a caller's error was logged: %q", logs.String())
	}
}

func (l *stubLedger) Get(context.Context, string, bool) (*ledgerdv1.Reservation, error) {
	return nil, l.getErr
}
