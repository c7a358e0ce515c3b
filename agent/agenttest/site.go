package agenttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent"
	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/ledger/replicated"
	"github.com/ledgerd/ledgerd/rpc"
)

// Clock is a settable clock shared by a Site's servers and its log.
type Clock struct{ ms atomic.Int64 }

// NewClock starts at t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.ms.Store(t.UnixMilli())
	return c
}

// Now returns the current time.
func (c *Clock) Now() time.Time { return time.UnixMilli(c.ms.Load()).UTC() }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// LocalLog is a single-replica stand-in for the Raft log: it stamps every
// command with the clock, gives it the next index and applies it to the
// FSM, serially. Down makes Apply fail with cluster.ErrNoLeader, as during
// an election.
type LocalLog struct {
	FSM   *fsm.FSM
	Clock *Clock
	Down  atomic.Bool

	mu    sync.Mutex
	index uint64
}

// Apply implements ledger.Log.
func (l *LocalLog) Apply(ctx context.Context, cmd []byte) ([]byte, error) {
	if l.Down.Load() {
		return nil, fmt.Errorf("local log: %w", cluster.ErrNoLeader)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A leader checks what peers forward; the local log checks every
	// command, as a leader would check a forwarded one.
	if _, err := fsm.Decode(cmd); err != nil {
		return nil, fmt.Errorf("local log: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	stamped, err := fsm.Stamp(cmd, l.Clock.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("local log: %w", err)
	}
	l.index++
	return l.FSM.ApplyCommand(l.index, stamped), nil
}

// Tick applies the periodic expiry command, as the leader does every second.
func (l *LocalLog) Tick() error {
	_, err := l.Apply(context.Background(), fsm.TickCommand())
	return err
}

// ReadBarrier implements ledger.Log; a single replica is always current.
func (l *LocalLog) ReadBarrier(context.Context) error {
	if l.Down.Load() {
		return fmt.Errorf("local log: %w", cluster.ErrNoLeader)
	}
	return nil
}

// Tokens used by NewAuth.
const (
	TokenAcme   = "acme-token-0001"
	TokenGlobex = "globex-token-0002"
	TokenOps    = "ops-token-0003"
)

// NewAuth returns an Authenticator with tenants acme and globex and an
// operator "ops".
func NewAuth(t testing.TB) *rpc.Authenticator {
	t.Helper()
	a, err := rpc.NewAuthenticator(rpc.AuthFile{Tokens: []rpc.TokenEntry{
		{Token: TokenAcme, Tenant: "acme"},
		{Token: TokenGlobex, Tenant: "globex"},
		{Token: TokenOps, Tenant: "ops", Operator: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Options configures a Site.
type Options struct {
	// Servers is the number of API servers sharing the ledger (default 1):
	// stand-ins for the nodes of one cluster, to test fail-over.
	Servers int
	// Start is the clock's start (default 2030-01-01T00:00:00Z).
	Start time.Time
	// Server options; Ledger, Now and Logger are filled in.
	API rpc.Options
	// FSM configures the state machine.
	FSM fsm.Config
}

// Site is one ledger served by one or more API servers.
type Site struct {
	FSM    *fsm.FSM
	Log    *LocalLog
	Ledger *replicated.Ledger
	Clock  *Clock
	// URLs of the servers ("http://127.0.0.1:port"), by index.
	URLs []string
	// Addrs are the same without the scheme.
	Addrs   []string
	servers []*http.Server
}

// NewSite starts a Site; it is stopped by t.Cleanup.
func NewSite(t testing.TB, o Options) *Site {
	t.Helper()
	if o.Servers <= 0 {
		o.Servers = 1
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	f, err := fsm.New(o.FSM)
	if err != nil {
		t.Fatal(err)
	}
	s := &Site{FSM: f, Clock: NewClock(o.Start)}
	s.Log = &LocalLog{FSM: f, Clock: s.Clock}
	s.Ledger = agent.NewLedger(s.Log, f)
	api := o.API
	api.Ledger = s.Ledger
	api.Now = s.Clock.Now
	if api.Logger == nil {
		api.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := rpc.New(api)
	if err != nil {
		t.Fatal(err)
	}
	for range o.Servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: srv.Handler(), Protocols: rpc.ServeProtocols(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		s.servers = append(s.servers, hs)
		s.Addrs = append(s.Addrs, ln.Addr().String())
		s.URLs = append(s.URLs, "http://"+ln.Addr().String())
	}
	t.Cleanup(s.Close)
	return s
}

// Stop closes server i (its connections break, its address refuses).
func (s *Site) Stop(i int) {
	if err := s.servers[i].Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		panic(err)
	}
}

// Close stops every server.
func (s *Site) Close() {
	for _, hs := range s.servers {
		_ = hs.Close()
	}
}
