// Package tlssniff serves TLS and plaintext clients on one port: it reads
// the first byte of each accepted connection and hands back a TLS server
// connection when that byte opens a TLS handshake (a handshake record,
// 0x16) and the plain connection, first byte included, otherwise. Raft's
// plain wire protocol starts with a small RPC type byte and HTTP with a
// method letter (or the HTTP/2 preface), so neither is taken for TLS.
//
// It exists for one purpose: moving a running insecure cluster to a
// secure one by a rolling restart, while some peers still speak
// plaintext and others already speak TLS. What it must not do: decide
// whether a plaintext peer is welcome (its caller does, and a secure
// agent does not use it at all), or block Accept on a slow client (each
// connection is sniffed on its own goroutine, bounded by a deadline).
package tlssniff

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// recordTypeHandshake is the first byte of every TLS ClientHello.
const recordTypeHandshake = 0x16

// Listener accepts TLS and plaintext connections on one inner listener.
// Accept returns a *tls.Conn (not yet handshaken) for a TLS client, so
// that servers which look for one (net/http sets Request.TLS and
// negotiates HTTP/2 from it) treat it as TLS, and the plain connection
// otherwise. It is safe for concurrent use; Close closes the inner
// listener and every connection still being sniffed.
type Listener struct {
	inner   net.Listener
	conf    *tls.Config
	timeout time.Duration

	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	pending map[net.Conn]struct{} // being sniffed; closed by Close
	closed  bool
}

// NewListener starts accepting on inner. conf is the TLS server
// configuration of TLS clients and must not be nil; timeout bounds the
// wait for a client's first byte (a client that sends nothing within it
// is dropped) and must be positive. The caller must Close the listener.
func NewListener(inner net.Listener, conf *tls.Config, timeout time.Duration) (*Listener, error) {
	if inner == nil {
		return nil, errors.New("tlssniff: inner listener is nil")
	}
	if conf == nil {
		return nil, errors.New("tlssniff: TLS config is nil")
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("tlssniff: timeout must be positive, got %s", timeout)
	}
	l := &Listener{inner: inner, conf: conf, timeout: timeout,
		conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{}),
		pending: map[net.Conn]struct{}{}}
	go l.acceptLoop()
	return l, nil
}

// acceptLoop accepts from the inner listener until it is closed, and
// sniffs every connection on its own goroutine. Accept errors other than
// a closed listener are handed to Accept unchanged (net/http and Raft
// back off on temporary ones), then accepting goes on.
func (l *Listener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.Close()
				return
			}
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.pending[c] = struct{}{}
		l.mu.Unlock()
		go l.sniff(c)
	}
}

// sniff reads c's first byte and queues the connection for Accept.
func (l *Listener) sniff(c net.Conn) {
	out, err := l.classify(c)
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	select {
	case l.conns <- out:
	case <-l.done:
		c.Close()
	}
}

func (l *Listener) classify(c net.Conn) (net.Conn, error) {
	if err := c.SetReadDeadline(time.Now().Add(l.timeout)); err != nil {
		return nil, err
	}
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		return nil, err
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	pc := &peekedConn{Conn: c, first: b[0], has: true}
	if b[0] == recordTypeHandshake {
		return tls.Server(pc, l.conf), nil
	}
	return pc, nil
}

// Accept waits for the next sniffed connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, fmt.Errorf("tlssniff: accept: %w", net.ErrClosed)
	}
}

// Close closes the inner listener and the connections being sniffed.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.mu.Lock()
		l.closed = true
		for c := range l.pending {
			c.Close()
		}
		l.mu.Unlock()
	})
	if errors.Is(err, net.ErrClosed) {
		err = nil // already closed by its owner
	}
	return err
}

// Addr is the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// peekedConn gives back the sniffed first byte before reading on.
type peekedConn struct {
	net.Conn
	first byte
	has   bool
}

// Read implements net.Conn. The first call returns the sniffed byte
// alone: a Read that has data must not wait for more.
func (c *peekedConn) Read(p []byte) (int, error) {
	if c.has && len(p) > 0 {
		p[0] = c.first
		c.has = false
		return 1, nil
	}
	return c.Conn.Read(p)
}
