package jepsen

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"
)

// Proxy forwards TCP connections accepted on its own loopback port to one
// target address and injects faults per source: it is the place where the
// network between two ledgerd nodes can be cut without root privileges.
// Every node advertises a proxy's address (not its own) for Raft and for
// leader forwarding, so each inbound node-to-node connection crosses the
// proxy in front of the destination; the proxy learns which node opened the
// connection through Identify and applies that link's faults.
//
// Faults:
//   - cut: existing connections from the source are closed at once and new
//     ones are accepted but black-holed (never forwarded, bytes discarded)
//     until the link heals, as a silent network partition looks to TCP;
//   - delay: every chunk waits delay ± jitter before it is written on;
//   - loss: every chunk resets the connection with the given probability
//     (TCP turns packet loss into stalls and resets; a reset is the visible
//     part that the transport must survive).
//
// A Proxy is safe for concurrent use.
type Proxy struct {
	name     string
	ln       net.Listener
	identify func(remote, local net.Addr) string

	mu     sync.Mutex
	target string
	faults map[string]LinkFaults // by source node; "" = unidentified sources
	conns  map[*proxyConn]struct{}
	stats  map[string]*LinkStats // by source
	closed bool
	rng    *rand.Rand
	wg     sync.WaitGroup
}

// LinkFaults describes the faults applied to traffic from one source.
type LinkFaults struct {
	Cut    bool
	Delay  time.Duration
	Jitter time.Duration
	Loss   float64 // probability in [0,1] that a chunk resets the connection
}

type proxyConn struct {
	src        string
	down, up   net.Conn // down: accepted from the source; up: dialled to the target (nil when black-holed)
	closeOnce  sync.Once
	blackholed bool
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		c.down.Close()
		if c.up != nil {
			c.up.Close()
		}
	})
}

// NewProxy listens on listen (use "127.0.0.1:0" for a free port) and
// forwards to target. identify maps an accepted connection's remote and
// local addresses to the name of the node that opened it ("" if unknown);
// nil treats every source as unknown. seed makes loss and jitter
// replayable.
func NewProxy(name, listen, target string, identify func(remote, local net.Addr) string, seed uint64) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: listen %s: %w", name, listen, err)
	}
	if identify == nil {
		identify = func(net.Addr, net.Addr) string { return "" }
	}
	p := &Proxy{
		name: name, target: target, ln: ln, identify: identify,
		faults: map[string]LinkFaults{},
		conns:  map[*proxyConn]struct{}{},
		stats:  map[string]*LinkStats{},
		rng:    rand.New(rand.NewPCG(seed, 0x70726f7879)),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address peers should dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget makes new connections go to target; live ones stay where they
// are. The harness uses it when a node moves to other ports.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Name identifies the proxy in logs and reports (e.g. "n2/raft").
func (p *Proxy) Name() string { return p.name }

// SetFaults replaces the faults applied to traffic from src. Cutting closes
// that source's live connections; healing closes its black-holed ones so
// that the source reconnects and is forwarded.
func (p *Proxy) SetFaults(src string, f LinkFaults) {
	p.mu.Lock()
	old := p.faults[src]
	if f == (LinkFaults{}) {
		delete(p.faults, src)
	} else {
		p.faults[src] = f
	}
	var drop []*proxyConn
	if f.Cut != old.Cut {
		for c := range p.conns {
			if c.src == src && c.blackholed != f.Cut {
				drop = append(drop, c)
			}
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// LinkStats counts the connections a proxy accepted from one source: the
// evidence that node-to-node traffic really crossed the proxies and that
// cuts took effect. Source "" is traffic no node process owned.
type LinkStats struct {
	Proxy      string `json:"proxy"`
	Source     string `json:"source"`
	Accepted   int    `json:"accepted"`
	Blackholed int    `json:"blackholed"`
}

// Stats returns the per-source connection counts, sorted by source.
func (p *Proxy) Stats() []LinkStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]LinkStats, 0, len(p.stats))
	for _, src := range slices.Sorted(maps.Keys(p.stats)) {
		out = append(out, *p.stats[src])
	}
	return out
}

// Heal removes every fault from every source.
func (p *Proxy) Heal() {
	p.mu.Lock()
	srcs := make([]string, 0, len(p.faults))
	for s := range p.faults {
		srcs = append(srcs, s)
	}
	p.mu.Unlock()
	for _, s := range srcs {
		p.SetFaults(s, LinkFaults{})
	}
}

// Close stops accepting, closes every connection and waits for the
// forwarding goroutines to finish.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) faultsFor(src string) LinkFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults[src]
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.wg.Add(1)
		go p.serve(down)
	}
}

func (p *Proxy) serve(down net.Conn) {
	defer p.wg.Done()
	c := &proxyConn{src: p.identify(down.RemoteAddr(), down.LocalAddr()), down: down}
	f := p.faultsFor(c.src)
	if !f.Cut {
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			down.Close()
			return
		}
		c.up = up
	} else {
		c.blackholed = true
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	st := p.stats[c.src]
	if st == nil {
		st = &LinkStats{Proxy: p.name, Source: c.src}
		p.stats[c.src] = st
	}
	st.Accepted++
	if c.blackholed {
		st.Blackholed++
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.close()
	}()
	if c.blackholed {
		// Swallow whatever arrives until the link heals (SetFaults closes
		// us) or the source gives up.
		_, _ = io.Copy(io.Discard, down)
		return
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(c, c.down, c.up) }()
	go func() { defer pumps.Done(); p.pump(c, c.up, c.down) }()
	pumps.Wait()
}

// pump copies one direction chunk by chunk, applying the source's delay and
// loss to each chunk. Either direction ending closes the whole connection.
func (p *Proxy) pump(c *proxyConn, from, to net.Conn) {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			f := p.faultsFor(c.src)
			if f.Cut {
				return
			}
			if f.Delay > 0 || f.Jitter > 0 {
				d := f.Delay
				if f.Jitter > 0 {
					p.mu.Lock()
					d += time.Duration(p.rng.Int64N(int64(2*f.Jitter))) - f.Jitter
					p.mu.Unlock()
				}
				if d > 0 {
					time.Sleep(d)
				}
			}
			if f.Loss > 0 {
				p.mu.Lock()
				lost := p.rng.Float64() < f.Loss
				p.mu.Unlock()
				if lost {
					return
				}
			}
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
