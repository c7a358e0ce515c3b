package tlssniff

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testpki"
)

// echoServer serves ln: every accepted connection gets back what it
// sends, prefixed by "tls " or "plain " for the kind Accept returned.
func echoServer(t *testing.T, ln net.Listener) {
	t.Helper()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				kind := "plain "
				if _, ok := c.(*tls.Conn); ok {
					kind = "tls "
				}
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(c, kind); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

func newListener(t *testing.T, timeout time.Duration) (*Listener, *testpki.CA) {
	t.Helper()
	ca := testpki.NewCA(t, "sniff")
	leaf := ca.Issue(t, "server", testpki.Options{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(inner, &tls.Config{Certificates: []tls.Certificate{leaf.TLS}, MinVersion: tls.VersionTLS12}, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, ca
}

// roundTrip writes msg on c, half-closes, and returns all it reads.
func roundTrip(t *testing.T, c net.Conn, msg []byte) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	switch cc := c.(type) {
	case *net.TCPConn:
		_ = cc.CloseWrite()
	case *tls.Conn:
		_ = cc.CloseWrite()
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryFirstByte: a plaintext client whose stream starts with any
// byte but a TLS handshake record reaches the server as plaintext with
// its bytes unchanged (the first one included); a TLS client on the same
// port reaches it as TLS.
func TestEveryFirstByte(t *testing.T) {
	ln, ca := newListener(t, 5*time.Second)
	echoServer(t, ln)
	for b := range 256 {
		if b == recordTypeHandshake {
			continue
		}
		msg := []byte{byte(b), 'x', 0, 0x16, 'y'}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got := roundTrip(t, c, msg)
		c.Close()
		if want := "plain " + string(msg); got != want {
			t.Fatalf("first byte %#x: got %q, want %q", b, got, want)
		}
	}
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, []byte("\x16hello")); got != "tls \x16hello" {
		t.Fatalf("TLS client: got %q", got)
	}
}

// TestSilentClientDoesNotBlockOthers: a client that connects and sends
// nothing holds neither Accept nor the clients after it, and is dropped
// once the sniff timeout passes.
func TestSilentClientDoesNotBlockOthers(t *testing.T) {
	ln, _ := newListener(t, 300*time.Millisecond)
	echoServer(t, ln)
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, []byte("GET")); got != "plain GET" {
		t.Fatalf("got %q behind a silent client", got)
	}
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := silent.Read(make([]byte, 1))
	if n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("silent client: read %d bytes, err %v; want the connection closed by the listener", n, err)
	}
}

// isTimeout tells a read that ran into its own deadline (the listener
// never closed the connection) from one the listener ended.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestCloseEndsAccept: Close makes a waiting Accept return net.ErrClosed
// and closes a connection still being sniffed.
func TestCloseEndsAccept(t *testing.T) {
	ln, _ := newListener(t, time.Minute)
	pending, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pending.Close()
	accepted := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		accepted <- err
	}()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still blocked 10s after Close")
	}
	_ = pending.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := pending.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("connection being sniffed at Close: read err %v, want it closed", err)
	}
	if err := ln.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestHTTPServesBoth: net/http on the listener sees TLS requests as TLS
// (Request.TLS set, HTTP/2 negotiated) and plaintext ones as plaintext.
func TestHTTPServesBoth(t *testing.T) {
	ln, ca := newListener(t, 5*time.Second)
	ln.conf.NextProtos = []string{"h2", "http/1.1"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			_, _ = io.WriteString(w, "tls "+r.Proto)
			return
		}
		_, _ = io.WriteString(w, "plain "+r.Proto)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	for _, c := range []struct {
		url  string
		tr   *http.Transport
		want string
	}{
		{"http://" + ln.Addr().String() + "/", &http.Transport{}, "plain HTTP/1.1"},
		{"https://" + ln.Addr().String() + "/", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true}, "tls HTTP/2.0"},
	} {
		resp, err := (&http.Client{Transport: c.tr, Timeout: 10 * time.Second}).Get(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		c.tr.CloseIdleConnections()
		if !strings.HasPrefix(body.String(), c.want) {
			t.Errorf("%s: %q, want %q", c.url, body.String(), c.want)
		}
	}
}

func TestNewListenerRefusesBadArguments(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	for _, c := range []struct {
		name    string
		inner   net.Listener
		conf    *tls.Config
		timeout time.Duration
		want    string
	}{
		{"no listener", nil, &tls.Config{}, time.Second, "inner listener"},
		{"no TLS config", inner, nil, time.Second, "TLS config"},
		{"no timeout", inner, &tls.Config{}, 0, "timeout"},
	} {
		if _, err := NewListener(c.inner, c.conf, c.timeout); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
}
