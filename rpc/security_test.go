package rpc_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/ledgerd/ledgerd/agent"
	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/testpki"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// pki is a throw-away CA with a server and a client certificate, as PEM files.
type pki struct {
	caFile, certFile, keyFile string
	clientCert, clientKey     string
	pool                      *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ledgerd test CA")
	p := &pki{caFile: ca.WriteFile(t, dir), pool: ca.Pool}
	p.certFile, p.keyFile = ca.Issue(t, "server", testpki.Options{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).WriteFiles(t, dir)
	p.clientCert, p.clientKey = ca.Issue(t, "broker-1", testpki.Options{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}).WriteFiles(t, dir)
	return p
}

// serveTLS serves an rpc.Server over TLS with the given config.
func serveTLS(t *testing.T, srv *rpc.Server, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(), Protocols: rpc.ServeProtocols(), TLSConfig: cfg, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = hs.Serve(tls.NewListener(ln, cfg)) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

func TestMutualTLSIdentity(t *testing.T) {
	p := newPKI(t)
	site := agenttest.NewSite(t, agenttest.Options{})
	auth, err := rpc.NewAuthenticator(rpc.AuthFile{
		Tokens: []rpc.TokenEntry{{Token: agenttest.TokenOps, Tenant: "ops", Operator: true}},
		Certs:  []rpc.CertEntry{{CommonName: "broker-1", Tenant: "acme"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rpc.New(rpc.Options{Ledger: site.Ledger, Auth: auth, Now: site.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own TLS set-up of the API listener (tls_http with
	// tls_verify_incoming), so this covers the code the agent runs.
	ac := agent.DefaultConfig()
	ac.TLSHTTP, ac.TLSVerifyIncoming = true, true
	ac.TLSCertFile, ac.TLSKeyFile, ac.TLSCAFile = p.certFile, p.keyFile, p.caFile
	cfg, _, err := ac.HTTPTLS()
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, srv, cfg)

	cert, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Operator over TLS with a token and the client certificate creates a
	// resource; the certificate alone maps to tenant acme.
	opsC, _ := client.New([]string{addr}, client.Options{Token: agenttest.TokenOps, TLS: &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{cert}}})
	if _, err := opsC.CreateResource(ctx, &ledgerdv1.Resource{Name: "gpu", Capacity: 8}); err != nil {
		t.Fatalf("operator over mTLS: %v", err)
	}
	broker, _ := client.New([]string{addr}, client.Options{TLS: &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{cert}}})
	r, err := broker.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: shape("gpu", 1, time.Hour, time.Hour, 0)})
	if err != nil || r.Tenant != "acme" {
		t.Fatalf("certificate identity: %v, %v", r, err)
	}
	// Without a client certificate the handshake fails.
	anon, _ := client.New([]string{addr}, client.Options{MaxAttempts: 1, TLS: &tls.Config{RootCAs: p.pool}})
	if _, err := anon.Resources(ctx); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

func TestRateLimitPerTenant(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{API: rpc.Options{RateLimit: 0.001, RateBurst: 2}})
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	globex := newAPI(s.URLs[0], agenttest.TokenGlobex)
	ctx := context.Background()
	list := func(c api) error {
		_, err := c.rsc.List(ctx, connect.NewRequest(&ledgerdv1.ResourceServiceListRequest{}))
		return err
	}
	for i := range 2 {
		if err := list(acme); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := list(acme)
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("third call: %v, want ResourceExhausted", err)
	}
	var info *errdetails.ErrorInfo
	var retry *errdetails.RetryInfo
	for _, d := range err.(*connect.Error).Details() {
		switch v, _ := d.Value(); v := v.(type) {
		case *errdetails.ErrorInfo:
			info = v
		case *errdetails.RetryInfo:
			retry = v
		}
	}
	if info == nil || info.Reason != rpc.ReasonRateLimited || retry == nil || retry.RetryDelay.AsDuration() <= 0 {
		t.Fatalf("details: %v %v", info, retry)
	}
	// Another tenant has its own bucket.
	if err := list(globex); err != nil {
		t.Fatalf("globex limited by acme's calls: %v", err)
	}
}

func TestStreamsAreAuthenticated(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{})
	anon := newAPI(s.URLs[0], "")
	stream, err := anon.res.Watch(context.Background(), connect.NewRequest(&ledgerdv1.WatchRequest{FromVersion: 1}))
	if err == nil {
		for stream.Receive() {
			t.Fatal("anonymous watch received an event")
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("anonymous watch: %v", err)
	}
	// Tenants only see their own reservation events, operators all.
	acme := newAPI(s.URLs[0], agenttest.TokenAcme)
	globex := newAPI(s.URLs[0], agenttest.TokenGlobex)
	ctx := context.Background()
	if _, err := globex.res.Reserve(ctx, connect.NewRequest(&ledgerdv1.ReserveRequest{Shape: shape("gpu", 1, time.Hour, time.Hour, 0)})); err != nil {
		t.Fatal(err)
	}
	h, err := acme.res.History(ctx, connect.NewRequest(&ledgerdv1.HistoryRequest{FromVersion: 1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h.Msg.Events {
		if e.Reservation != nil {
			t.Fatalf("acme sees globex's event %v", e)
		}
	}
}

func TestCORSOnlyForConfiguredOrigins(t *testing.T) {
	s, _ := newSite(t, agenttest.Options{API: rpc.Options{CORSOrigins: []string{"https://app.example"}}})
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, s.URLs[0]+"/ledgerd.v1.ResourceService/List", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,authorization")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ok := preflight("https://app.example")
	if ok.StatusCode != http.StatusNoContent || ok.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || ok.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Fatalf("allowed origin: %d %v", ok.StatusCode, ok.Header)
	}
	bad := preflight("https://evil.example")
	if bad.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin got CORS headers: %v", bad.Header)
	}
}

// TestAuthFileValidation: a tokens file that cannot mean one thing is
// refused with an error naming the file and the entry or key.
func TestAuthFileValidation(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"no tenant", `{"tokens":[{"token":"abcdefghij"}]}`, "tokens[0].tenant: required"},
		{"short token", `{"tokens":[{"token":"abc","tenant":"a"}]}`, "tokens[0].token: at least 8 characters"},
		{"bad hash", `{"tokens":[{"token":"sha256:zz","tenant":"a"}]}`, "tokens[0].token: sha256: needs 64 hex digits"},
		{"duplicate", `{"tokens":[{"token":"abcdefghij","tenant":"a"},{"token":"abcdefghij","tenant":"b"}]}`, "tokens[1].token: duplicate token"},
		// sha256("abcdefghij") is the plain token of the first entry.
		{"duplicate by hash", `{"tokens":[{"token":"abcdefghij","tenant":"a"},{"token":"sha256:72399361da6a7754fec986dca5b7cbaf1c810a28ded4abaf56b2106d06cb78b0","tenant":"b"}]}`, "tokens[1].token: duplicate token"},
		{"white space", `{"tokens":[{"token":"abcdefghij ","tenant":"a"}]}`, "tokens[0].token: white space at either end"},
		{"control character", `{"tokens":[{"token":"abcd\nefghij","tenant":"a"}]}`, "tokens[0].token: control character at byte 4"},
		{"duplicate common name", `{"tokens":[],"certs":[{"common_name":"b1","tenant":"a"},{"common_name":"b1","tenant":"b"}]}`, `certs[1].common_name: "b1" given twice`},
		{"cert without tenant", `{"certs":[{"common_name":"b1"}]}`, "certs[0]: common_name and tenant are required"},
		{"unknown field", `{"tokens":[],"extra":1}`, `unknown key "extra"`},
		{"wrong type", `{"tokens":[{"token":"abcdefghij","tenant":"a","operator":"yes"}]}`, `key "tokens.operator": want true or false, got string`},
		{"not a list", `{"tokens":{"token":"abcdefghij"}}`, `key "tokens": want a list of objects, got object`},
		{"not an object", `[{"token":"abcdefghij"}]`, `want a JSON object with "tokens" and "certs", got array`},
		{"trailing", `{"tokens":[]} {"tokens":[]}`, "trailing data after the JSON object"},
		{"not json", `tokens:`, "invalid character"},
	} {
		p := filepath.Join(dir, "tokens.json")
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := rpc.LoadAuthFile(p)
		if err == nil || !strings.Contains(err.Error(), "tokens file "+p+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming the file and %q", tc.name, err, tc.want)
		}
	}
	p := filepath.Join(dir, "ok.json")
	// sha256("abcdefghij")
	body := `{"tokens":[{"token":"sha256:72399361da6a7754fec986dca5b7cbaf1c810a28ded4abaf56b2106d06cb78b0","tenant":"acme"}]}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.LoadAuthFile(p); err != nil {
		t.Fatal(err)
	}
}

func TestHealthFollowsReadinessAndReflectionListsServices(t *testing.T) {
	site := agenttest.NewSite(t, agenttest.Options{})
	var ready atomic.Bool
	srv, err := rpc.New(rpc.Options{Ledger: site.Ledger, Ready: ready.Load})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	hc := grpchealth.NewClient(ts.Client(), ts.URL)
	ctx := context.Background()
	for _, want := range []grpchealth.Status{grpchealth.StatusNotServing, grpchealth.StatusServing} {
		ready.Store(want == grpchealth.StatusServing)
		resp, err := hc.Check(ctx, &grpchealth.CheckRequest{Service: "ledgerd.v1.ReservationService"})
		if err != nil || resp.Status != want {
			t.Fatalf("health = %v, %v; want %v", resp, err, want)
		}
	}
	if _, err := hc.Check(ctx, &grpchealth.CheckRequest{Service: "nope.Service"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("unknown service: %v", err)
	}

	// Reflection over a plain gRPC connection lists the three services.
	conn, err := grpc.NewClient(strings.TrimPrefix(site.URLs[0], "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	for _, want := range rpc.ServiceNames {
		if !slices.Contains(names, want) {
			t.Fatalf("reflection lists %v, missing %s", names, want)
		}
	}
}
