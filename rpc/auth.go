package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
	"github.com/ledgerd/ledgerd/internal/strictjson"
	"github.com/ledgerd/ledgerd/ledger"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Principal is an authenticated caller.
type Principal struct {
	// Tenant owns the reservations the caller makes and is the only tenant
	// whose reservations it sees.
	Tenant string
	// Operator may manage resources and the cluster and see every tenant.
	Operator bool
}

// TokenEntry is one line of the tokens file.
type TokenEntry struct {
	// Token is the bearer token in clear text, or "sha256:<hex>" of it.
	Token string `json:"token"`
	// Tenant the token maps to; required.
	Tenant string `json:"tenant"`
	// Operator grants the operator role.
	Operator bool `json:"operator,omitempty"`
}

// CertEntry maps a verified client certificate's subject common name to a
// principal (mutual TLS without a bearer token).
type CertEntry struct {
	CommonName string `json:"common_name"`
	Tenant     string `json:"tenant"`
	Operator   bool   `json:"operator,omitempty"`
}

// AuthFile is the JSON layout of the tokens file:
//
//	{"tokens": [{"token": "s3cret", "tenant": "acme"},
//	            {"token": "sha256:9f86...", "tenant": "ops", "operator": true}],
//	 "certs":  [{"common_name": "broker-1", "tenant": "acme"}]}
type AuthFile struct {
	Tokens []TokenEntry `json:"tokens"`
	Certs  []CertEntry  `json:"certs,omitempty"`
}

// Authenticator maps credentials to principals. A nil *Authenticator means
// authentication is off: every caller is the operator of tenant "default"
// (the -dev default, see README.md).
type Authenticator struct {
	// creds is replaced whole by Replace; readers load it once per call.
	creds atomic.Pointer[credentials]
}

// credentials are the lookups of one tokens file.
type credentials struct {
	byHash map[[32]byte]Principal
	byCN   map[string]Principal
}

// Replace makes a take the credentials of from (a tokens file read again),
// atomically: a call is checked against the old set or the new one, never
// a mix. It is how an agent reloads its tokens file without a restart.
func (a *Authenticator) Replace(from *Authenticator) {
	a.creds.Store(from.creds.Load())
}

// LoadAuthFile reads a tokens file (see AuthFile and ParseAuthFile).
func LoadAuthFile(path string) (*Authenticator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: read tokens file: %w", err)
	}
	return ParseAuthFile(path, b)
}

// ParseAuthFile builds an Authenticator from the bytes b of the tokens
// file name: one JSON object (see AuthFile) and nothing after it. Unknown
// keys and values of the wrong type are errors naming the key.
func ParseAuthFile(name string, b []byte) (*Authenticator, error) {
	var f AuthFile
	if err := strictjson.Decode(b, &f); err != nil {
		var te *strictjson.TypeError
		var uk *strictjson.UnknownKeyError
		switch {
		case errors.As(err, &te) && te.Key == "":
			return nil, fmt.Errorf("auth: tokens file %s: want a JSON object with \"tokens\" and \"certs\", got %s", name, te.Got)
		case errors.As(err, &uk):
			return nil, fmt.Errorf("auth: tokens file %s: %v (the keys are tokens, certs and their entries' token, tenant, operator, common_name)", name, uk)
		case errors.As(err, &te), errors.Is(err, strictjson.ErrTrailing):
			return nil, fmt.Errorf("auth: tokens file %s: %v", name, err)
		}
		return nil, fmt.Errorf("auth: tokens file %s: %w", name, err)
	}
	c, err := newCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file %s: %w", name, err)
	}
	auth := &Authenticator{}
	auth.creds.Store(c)
	return auth, nil
}

// NewAuthenticator builds an Authenticator, checking every entry: a token
// of at least 8 characters without white space at either end (a presented
// token is trimmed, so such a one could never match) or control characters
// (which no header carries), or the SHA-256 of one, no token twice, a tenant for each, and no certificate common name
// twice (which of two tenants it meant would be a guess).
func NewAuthenticator(f AuthFile) (*Authenticator, error) {
	c, err := newCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	auth := &Authenticator{}
	auth.creds.Store(c)
	return auth, nil
}

// newCredentials checks the entries of f (see NewAuthenticator) and
// builds their lookups; its errors name the entry and key.
func newCredentials(f AuthFile) (*credentials, error) {
	a := &credentials{byHash: map[[32]byte]Principal{}, byCN: map[string]Principal{}}
	for i, t := range f.Tokens {
		if t.Tenant == "" {
			return nil, fmt.Errorf("tokens[%d].tenant: required", i)
		}
		var h [32]byte
		switch {
		case strings.HasPrefix(t.Token, "sha256:"):
			raw, err := hex.DecodeString(strings.TrimPrefix(t.Token, "sha256:"))
			if err != nil || len(raw) != 32 {
				return nil, fmt.Errorf("tokens[%d].token: sha256: needs 64 hex digits", i)
			}
			copy(h[:], raw)
		case len(t.Token) < 8:
			return nil, fmt.Errorf("tokens[%d].token: at least 8 characters required", i)
		case strings.TrimSpace(t.Token) != t.Token:
			return nil, fmt.Errorf("tokens[%d].token: white space at either end (a presented token is trimmed, so this one could never match)", i)
		case strings.IndexFunc(t.Token, isControl) >= 0:
			return nil, fmt.Errorf("tokens[%d].token: control character at byte %d (no HTTP header can carry it)", i, strings.IndexFunc(t.Token, isControl))
		default:
			h = sha256.Sum256([]byte(t.Token))
		}
		if _, dup := a.byHash[h]; dup {
			return nil, fmt.Errorf("tokens[%d].token: duplicate token", i)
		}
		a.byHash[h] = Principal{Tenant: t.Tenant, Operator: t.Operator}
	}
	for i, c := range f.Certs {
		if c.CommonName == "" || c.Tenant == "" {
			return nil, fmt.Errorf("certs[%d]: common_name and tenant are required", i)
		}
		if _, dup := a.byCN[c.CommonName]; dup {
			return nil, fmt.Errorf("certs[%d].common_name: %q given twice", i, c.CommonName)
		}
		a.byCN[c.CommonName] = Principal{Tenant: c.Tenant, Operator: c.Operator}
	}
	return a, nil
}

// isControl reports an ASCII control character other than the tab, which
// an HTTP header value cannot hold.
func isControl(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }

// devPrincipal is everyone when authentication is off.
var devPrincipal = Principal{Tenant: "default", Operator: true}

// errUnauthenticated is returned for a missing or unknown credential.
var errUnauthenticated = errors.New("missing or unknown bearer token")

// authenticate maps the request's credentials to a principal. Tokens are
// compared by SHA-256 digest, so lookups do not leak the token through timing.
func (auth *Authenticator) authenticate(h http.Header, peerCN string) (Principal, error) {
	if auth == nil {
		return devPrincipal, nil
	}
	a := auth.creds.Load()
	if v := h.Get("Authorization"); v != "" {
		// The scheme's name is case-insensitive (RFC 9110, section 11.1).
		scheme, tok, ok := strings.Cut(v, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return Principal{}, errUnauthenticated
		}
		if p, ok := a.byHash[sha256.Sum256([]byte(strings.TrimSpace(tok)))]; ok {
			return p, nil
		}
		return Principal{}, errUnauthenticated
	}
	if peerCN != "" {
		if p, ok := a.byCN[peerCN]; ok {
			return p, nil
		}
	}
	return Principal{}, errUnauthenticated
}

type principalKey struct{}

// PrincipalFrom returns the caller authenticated by the server's interceptor.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// peerCNKey carries the verified client certificate's common name from the
// HTTP layer (which sees the TLS state) to the interceptor.
type peerCNKey struct{}

// withPeerCN is HTTP middleware recording the verified client certificate.
func withPeerCN(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
			cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
			r = r.WithContext(context.WithValue(r.Context(), peerCNKey{}, cn))
		}
		next.ServeHTTP(w, r)
	})
}

// authInterceptor authenticates unary and streaming calls alike and puts
// the principal into the context; it also applies the rate limit per
// principal.
type authInterceptor struct {
	auth  *Authenticator
	limit *rateLimiter
}

func (i *authInterceptor) admit(ctx context.Context, h http.Header) (context.Context, error) {
	if p, ok := PrincipalFrom(ctx); ok {
		// Authenticated at the HTTP layer (withPreAuth).
		if err := i.limit.take(p.Tenant); err != nil {
			return ctx, err
		}
		return ctx, nil
	}
	cn, _ := ctx.Value(peerCNKey{}).(string)
	p, err := i.auth.authenticate(h, cn)
	if err != nil {
		e := connect.NewError(connect.CodeUnauthenticated, err)
		addDetail(e, &errdetails.ErrorInfo{Reason: ReasonUnauthenticated, Domain: ErrorDomain})
		return ctx, e
	}
	if err := i.limit.take(p.Tenant); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, principalKey{}, p), nil
}

// take spends one of tenant's tokens, or returns ResourceExhausted saying
// when the next one will be there. A nil limiter always allows.
func (l *rateLimiter) take(tenant string) error {
	if l == nil {
		return nil
	}
	if wait, ok := l.allow(tenant); !ok {
		e := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("rate limit exceeded for tenant %q", tenant))
		addDetail(e, &errdetails.ErrorInfo{Reason: ReasonRateLimited, Domain: ErrorDomain})
		addDetail(e, &errdetails.RetryInfo{RetryDelay: durationpb.New(wait)})
		return e
	}
	return nil
}

// WrapUnary implements connect.Interceptor.
func (i *authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, err := i.admit(ctx, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

// WrapStreamingClient implements connect.Interceptor; clients pass through.
func (i *authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler implements connect.Interceptor.
func (i *authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := i.admit(ctx, conn.RequestHeader())
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// callerOf returns the principal; handlers only run behind the interceptor,
// so a missing principal is an internal error.
func callerOf(ctx context.Context) (Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return Principal{}, connect.NewError(connect.CodeInternal, errors.New("no principal in context"))
	}
	return p, nil
}

// requireOperator refuses non-operators with PermissionDenied.
func requireOperator(ctx context.Context) (Principal, error) {
	p, err := callerOf(ctx)
	if err != nil {
		return p, err
	}
	if !p.Operator {
		return p, toConnect(fmt.Errorf("operator role required: %w", ledger.ErrPermission))
	}
	return p, nil
}
