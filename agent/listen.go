package agent

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Limits of the HTTP edge, so that slow or numerous clients cannot starve
// the agent of file descriptors or goroutines.
const (
	// bodyProgress is how long a request body may go without a byte
	// arriving; each read that brings data extends the deadline, so a
	// long upload (RestoreSnapshot) that keeps moving is never cut.
	bodyProgressDefault = 30 * time.Second
	// idleTimeout closes keep-alive connections with no request.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes caps a request's headers.
	maxHeaderBytes = 64 << 10
	// maxConnsPerIP is how many connections one address may hold open.
	maxConnsPerIP = 256
	// fdReserve is left to Raft, gossip, the log store and snapshots when
	// the connection cap is derived from the process's file limit.
	fdReserve = 128
)

// maxConns is the cap on the HTTP listener's open connections: the
// process's file limit less what the rest of the agent needs, at least 64.
func maxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<20 {
		return 1 << 16
	}
	return max(64, int(rl.Cur)-fdReserve)
}

// capListener closes, as soon as it accepts it, a connection over the cap
// of all connections or of its remote address's, so one client cannot
// exhaust the agent's file descriptors and /readyz keeps answering
// others. A closed connection costs its descriptor for a moment only.
type capListener struct {
	net.Listener
	total, perIP int

	mu    sync.Mutex
	open  int
	byIP  map[string]int
	drops uint64
}

func newCapListener(ln net.Listener, total, perIP int) *capListener {
	return &capListener{Listener: ln, total: total, perIP: perIP, byIP: map[string]int{}}
}

// Accept implements net.Listener.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		if l.open >= l.total || l.byIP[ip] >= l.perIP {
			l.drops++
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open++
		l.byIP[ip]++
		l.mu.Unlock()
		return &cappedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Dropped is the number of connections refused over a cap.
func (l *capListener) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drops
}

func (l *capListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// cappedConn gives its slot back once, on its first Close.
type cappedConn struct {
	net.Conn
	l    *capListener
	ip   string
	once sync.Once
}

// Close implements net.Conn.
func (c *cappedConn) Close() error {
	c.once.Do(func() { c.l.release(c.ip) })
	return c.Conn.Close()
}

// withBodyProgress gives a request body d to deliver each next chunk: a
// client that stops sending is cut off instead of holding its connection
// and goroutine for ever.
func withBodyProgress(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(d)); err == nil {
				r.Body = &progressBody{ReadCloser: r.Body, rc: rc, d: d}
			} else if !errors.Is(err, http.ErrNotSupported) {
				http.Error(w, "cannot bound the request body's read time", http.StatusInternalServerError)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// progressBody extends the read deadline each time data arrives.
type progressBody struct {
	io.ReadCloser
	rc *http.ResponseController
	d  time.Duration
}

// Read implements io.Reader. Once the body is complete the deadline is
// lifted: a stream (Watch) that answers for hours must not have its
// connection's reads, and with them the request's context, time out.
func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		_ = b.rc.SetReadDeadline(time.Time{})
	case n > 0:
		_ = b.rc.SetReadDeadline(time.Now().Add(b.d))
	}
	return n, err
}
