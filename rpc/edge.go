package rpc

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// The HTTP edge's defences, in front of Connect: a caller is authenticated
// from its headers before its body is read or inflated, callers that fail
// authentication are rate limited per address, and a compressed message
// is inflated only up to the size limit.

// Rate limit of failed authentications per remote address: a steady
// guess every 100 ms with a burst of 20. It is separate from the
// per-tenant limit, which only authenticated callers reach.
const (
	unauthRate  = 10
	unauthBurst = 20
)

// withPreAuth authenticates a request from its headers (bearer token or
// verified client certificate) before the handler reads its body, so an
// anonymous caller costs a header parse, never a body read, a
// decompression or an unmarshal. The principal travels to the interceptor
// in the context. A caller whose credentials are refused answers to the
// per-address limiter first, so guessing tokens is slow and cheap to
// refuse.
func (s *Server) withPreAuth(next http.Handler) http.Handler {
	errw := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r) // CORS preflight carries no credentials
			return
		}
		cn, _ := r.Context().Value(peerCNKey{}).(string)
		p, err := s.opts.Auth.authenticate(r.Header, cn)
		if err != nil {
			if wait, ok := s.unauth.allow(remoteHost(r)); !ok {
				e := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("too many unauthenticated requests from this address; retry in %s", wait.Round(1e6)))
				addDetail(e, &errdetails.ErrorInfo{Reason: ReasonRateLimited, Domain: ErrorDomain})
				_ = errw.Write(w, r, e)
				return
			}
			e := connect.NewError(connect.CodeUnauthenticated, err)
			addDetail(e, &errdetails.ErrorInfo{Reason: ReasonUnauthenticated, Domain: ErrorDomain})
			_ = errw.Write(w, r, e)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// remoteHost is the caller's IP address without the port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// errTooLarge stops a decompression at the size limit.
var errTooLarge = errors.New("inflated message exceeds the size limit")

// cappedGzip is a gzip Decompressor that refuses to inflate more than max
// bytes. Connect already stops reading the message one byte past its
// limit, but then inflates the rest to report the size; a gzip bomb of
// 1 MB that inflates to 1 GiB would cost a second of CPU per request. Past
// max this reader fails instead, which Connect reports as
// ResourceExhausted without reading further.
type cappedGzip struct {
	gzip.Reader
	max, read int64
	started   bool
}

func newCappedGzip(max int64) func() connect.Decompressor {
	return func() connect.Decompressor { return &cappedGzip{max: max} }
}

// Read implements io.Reader.
func (c *cappedGzip) Read(p []byte) (int, error) {
	if !c.started {
		return 0, errors.New("gzip: read before reset")
	}
	if c.read > c.max {
		return 0, errTooLarge
	}
	if room := c.max + 1 - c.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.Reader.Read(p)
	c.read += int64(n)
	return n, err
}

// Reset implements connect.Decompressor.
func (c *cappedGzip) Reset(r io.Reader) error {
	c.read, c.started = 0, true
	return c.Reader.Reset(r)
}

// Close implements connect.Decompressor.
func (c *cappedGzip) Close() error {
	if !c.started {
		return nil
	}
	return c.Reader.Close()
}
