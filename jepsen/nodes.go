package jepsen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ledgerd/ledgerd/internal/testnet"
)

// BuildAgent compiles the ledgerd binary from the module that contains the
// current directory into dir and returns its path. It builds without -race
// even when the caller runs under -race: the processes under test should
// run at production speed on a small machine.
func BuildAgent(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("build agent: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("build agent: not inside the ledgerd module")
	}
	root := filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(root, "cmd", "ledgerd")); err != nil {
		return "", fmt.Errorf("build agent: %w", err)
	}
	bin := filepath.Join(dir, "ledgerd")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "hashicorpmetrics", "-o", bin, "./cmd/ledgerd")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build agent: %w\n%s", err, b)
	}
	return bin, nil
}

// Node is one ledgerd process under test with the proxies in front of it.
type Node struct {
	Name    string
	DataDir string
	// Bound ports on 127.0.0.1 (the process listens here).
	RaftPort, GossipPort, APIPort int
	// RaftProxy and APIProxy sit in front of RaftPort and APIPort; the node
	// advertises their addresses, so all node-to-node traffic crosses them.
	RaftProxy, APIProxy *Proxy

	secure  []string // the agent flags that secure it (Security.AgentArgs)
	cmd     *exec.Cmd
	done    chan struct{}
	running bool
	paused  bool
	fresh   bool // started without bootstrap-expect: joins an existing cluster
	bound   bool // has answered HTTP once: its ports are its own from then on
	logFrom int64
}

// APIAddr is where clients of the harness reach the node directly.
func (n *Node) APIAddr() string { return fmt.Sprintf("127.0.0.1:%d", n.APIPort) }

// Cluster manages the ledgerd processes of one test cluster and the network
// between them. Methods are safe for concurrent use.
type Cluster struct {
	bin  string
	root string
	log  io.Writer
	// ExtraArgs are appended to every agent command line.
	extra []string
	// sec secures every node and client; nil only in an insecure cluster.
	sec *Security

	mu      sync.Mutex
	nodes   []*Node
	ids     *IDMap
	clients map[string]*ConnectClient
}

// ClusterConfig configures NewCluster.
type ClusterConfig struct {
	Bin   string    // ledgerd binary (see BuildAgent)
	Dir   string    // root for data dirs and logs
	Nodes int       // 3 or 5
	Log   io.Writer // progress lines; nil discards
	// ExtraArgs are appended to every `ledgerd agent` command line.
	ExtraArgs []string
	// Seed seeds the proxies' loss and jitter.
	Seed uint64
	// Insecure runs the nodes with -insecure: no TLS, no gossip key, no
	// tokens. Only for runs about the insecure mode itself (a comparison);
	// by default every cluster gets its own CA, certificates, gossip key
	// and tokens under Dir/pki (see Security).
	Insecure bool
}

// NewCluster allocates ports and proxies for cfg.Nodes nodes; Start runs them.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.Nodes < 1 {
		return nil, fmt.Errorf("cluster: Nodes must be >= 1, got %d", cfg.Nodes)
	}
	if cfg.Bin == "" {
		return nil, errors.New("cluster: Bin is required")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	c := &Cluster{bin: cfg.Bin, root: cfg.Dir, log: cfg.Log, extra: cfg.ExtraArgs, ids: NewIDMap(), clients: map[string]*ConnectClient{}}
	if !cfg.Insecure {
		names := make([]string, cfg.Nodes)
		for i := range names {
			names[i] = fmt.Sprintf("n%d", i+1)
		}
		sec, err := NewSecurity(filepath.Join(cfg.Dir, "pki"), names)
		if err != nil {
			return nil, err
		}
		c.sec = sec
	}
	for i := range cfg.Nodes {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), DataDir: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1))}
		ports, err := testnet.Ports(3)
		if err != nil {
			c.Close()
			return nil, err
		}
		n.RaftPort, n.GossipPort, n.APIPort = ports[0], ports[1], ports[2]
		if n.RaftProxy, err = NewProxy(n.Name+"/raft", "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", n.RaftPort), c.identify, cfg.Seed+uint64(2*i)); err != nil {
			c.Close()
			return nil, err
		}
		if n.APIProxy, err = NewProxy(n.Name+"/api", "127.0.0.1:0", n.APIAddr(), c.identify, cfg.Seed+uint64(2*i+1)); err != nil {
			n.RaftProxy.Close()
			c.Close()
			return nil, err
		}
		if c.sec != nil {
			if n.secure, err = c.sec.AgentArgs(n.Name); err != nil {
				n.RaftProxy.Close()
				n.APIProxy.Close()
				c.Close()
				return nil, err
			}
		}
		c.nodes = append(c.nodes, n)
	}
	return c, nil
}

// identify names the node process that owns the far end of a proxied
// connection.
func (c *Cluster) identify(remote, local net.Addr) string {
	return SocketOwner(remote, local, c.pids())
}

func (c *Cluster) pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, n := range c.nodes {
		if n.running && n.cmd != nil && n.cmd.Process != nil {
			out[n.Name] = n.cmd.Process.Pid
		}
	}
	return out
}

// Names lists the node names in order.
func (c *Cluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Name
	}
	return out
}

// Node returns the node with the given name, or nil.
func (c *Cluster) Node(name string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// apiAddr is the named node's API address (host:port), read under the
// lock that guards its ports; "" for an unknown node.
func (c *Cluster) apiAddr(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.Name == name {
			return n.APIAddr()
		}
	}
	return ""
}

// Client returns the API client for a node (shared ID map across nodes).
func (c *Cluster) Client(name string) Client { return c.connect(name) }

func (c *Cluster) connect(name string) *ConnectClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[name]; ok {
		return cl
	}
	var addr string
	for _, n := range c.nodes {
		if n.Name == name {
			addr = n.APIAddr()
		}
	}
	opt := ConnectOptions{NodeName: c.nameOf}
	if c.sec != nil {
		opt.Token, opt.TLS = c.sec.Token, c.sec.ClientTLS()
	}
	cl := NewConnectClient(addr, c.ids, opt)
	c.clients[name] = cl
	return cl
}

// nameOf maps an advertised (proxy) address back to a node name.
func (c *Cluster) nameOf(raftAddr, apiAddr, id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if raftAddr == n.RaftProxy.Addr() || apiAddr == n.APIProxy.Addr() || apiAddr == n.APIAddr() {
			return n.Name
		}
	}
	return id
}

// Security is the cluster's TLS material, gossip key and token; nil when
// the cluster runs insecure.
func (c *Cluster) Security() *Security { return c.sec }

// AgentArgs is the `ledgerd agent` command line for a node. Every node
// advertises its proxies, never its own ports, for Raft and for the API
// (followers forward writes to the leader's advertised API address), and
// is secured with the cluster's Security (or runs -insecure when the
// cluster was made so). Gossip is not proxied (see README.md).
func (c *Cluster) AgentArgs(n *Node) []string {
	var join []string
	bootstrap := 0
	for _, o := range c.nodes {
		if o != n {
			join = append(join, "-retry-join", fmt.Sprintf("127.0.0.1:%d", o.GossipPort))
		}
	}
	if !n.fresh {
		bootstrap = len(c.nodes)
	}
	args := []string{
		"agent",
		"-node-name", n.Name,
		"-data-dir", n.DataDir,
		"-raft-addr", fmt.Sprintf("127.0.0.1:%d", n.RaftPort),
		"-raft-advertise", n.RaftProxy.Addr(),
		"-gossip-addr", fmt.Sprintf("127.0.0.1:%d", n.GossipPort),
		"-http-addr", n.APIAddr(),
		"-http-advertise", n.APIProxy.Addr(),
		"-bootstrap-expect", strconv.Itoa(bootstrap),
	}
	args = append(args, join...)
	if c.sec == nil {
		// The insecure mode is what this cluster is about (see
		// ClusterConfig.Insecure).
		args = append(args, "-insecure")
	} else {
		args = append(args, n.secure...)
	}
	return append(args, c.extra...)
}

// Start launches every node that is not running and waits until those
// starting for the first time have bound their ports. Ports are reserved
// (see internal/testnet), but an unrelated program may still have bound
// one: such a node moves to fresh ports and starts again. Its proxies, the
// addresses the other nodes dial, stay where they are.
func (c *Cluster) Start() error {
	var first []*Node
	for _, name := range c.Names() {
		n := c.Node(name)
		c.mu.Lock()
		isFirst := !n.bound && !n.running
		c.mu.Unlock()
		if err := c.StartNode(name); err != nil {
			return err
		}
		if isFirst {
			first = append(first, n)
		}
	}
	for _, n := range first {
		for attempt := 1; ; attempt++ {
			err := c.waitBound(n, 60*time.Second)
			if err == nil {
				break
			}
			if !testnet.InUse(err) || attempt == testnet.Attempts {
				return err
			}
			fmt.Fprintf(c.log, "%v; moving %s to fresh ports\n", err, n.Name)
			if err := c.movePorts(n); err != nil {
				return err
			}
			if err := c.StartNode(n.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitBound waits until n answers HTTP (the agent serves only once Raft
// and gossip are bound too), or fails with the output of this launch if
// the process exits first.
func (c *Cluster) waitBound(n *Node, timeout time.Duration) error {
	c.mu.Lock()
	done, from := n.done, n.logFrom
	c.mu.Unlock()
	hc, scheme := &http.Client{Timeout: time.Second}, "http://"
	if c.sec != nil {
		hc.Transport, scheme = &http.Transport{TLSClientConfig: c.sec.ClientTLS()}, "https://"
		defer hc.CloseIdleConnections()
	}
	deadline := time.Now().Add(timeout)
	for {
		if resp, err := hc.Get(scheme + n.APIAddr() + "/healthz"); err == nil {
			resp.Body.Close()
			c.mu.Lock()
			n.bound = true
			c.mu.Unlock()
			return nil
		}
		select {
		case <-done:
			out, _ := os.ReadFile(filepath.Join(c.root, n.Name+".log"))
			return fmt.Errorf("start %s: exited: %s", n.Name, strings.TrimSpace(string(out[min(from, int64(len(out))):])))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start %s: no HTTP answer within %s", n.Name, timeout)
		}
	}
}

// movePorts gives n, which has never bound its ports, fresh ones.
func (c *Cluster) movePorts(n *Node) error {
	ports, err := testnet.Ports(3)
	if err != nil {
		return err
	}
	c.mu.Lock()
	n.RaftPort, n.GossipPort, n.APIPort = ports[0], ports[1], ports[2]
	c.mu.Unlock()
	n.RaftProxy.SetTarget(fmt.Sprintf("127.0.0.1:%d", n.RaftPort))
	n.APIProxy.SetTarget(n.APIAddr())
	return nil
}

// StartNode launches one node (a no-op if it is running). Output goes to
// <dir>/<name>.log, appended across restarts.
func (c *Cluster) StartNode(name string) error {
	n := c.Node(name)
	if n == nil {
		return fmt.Errorf("start: unknown node %q", name)
	}
	c.mu.Lock()
	if n.running {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	logf, err := os.OpenFile(filepath.Join(c.root, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	var from int64
	if st, err := logf.Stat(); err == nil {
		from = st.Size()
	}
	c.mu.Lock()
	args := c.AgentArgs(n)
	n.logFrom = from
	c.mu.Unlock()
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a Ctrl-C to the harness must not reach the nodes
	// before the harness has recorded what it did.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(logf, "=== %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	n.cmd, n.done, n.running, n.paused = cmd, done, true, false
	c.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		c.mu.Lock()
		if n.cmd == cmd {
			n.running, n.paused = false, false
		}
		c.mu.Unlock()
		close(done)
	}()
	return nil
}

// signal sends sig to a running node's process.
func (c *Cluster) signal(name string, sig syscall.Signal) (*Node, error) {
	n := c.Node(name)
	if n == nil {
		return nil, fmt.Errorf("signal: unknown node %q", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !n.running {
		return n, nil
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return n, fmt.Errorf("signal %s %v: %w", name, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return n, nil
}

// Kill sends SIGKILL (after SIGCONT if paused) and waits for the exit.
func (c *Cluster) Kill(name string) error {
	n, err := c.signal(name, syscall.SIGKILL)
	if err != nil || n == nil {
		return err
	}
	c.mu.Lock()
	done := n.done
	c.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("kill %s: process did not exit", name)
		}
	}
	return nil
}

// Pause freezes a node with SIGSTOP: its sockets stay open but it answers
// nothing, like a long GC pause or a VM migration.
func (c *Cluster) Pause(name string) error { _, err := c.signal(name, syscall.SIGSTOP); return err }

// Resume continues a paused node with SIGCONT.
func (c *Cluster) Resume(name string) error { _, err := c.signal(name, syscall.SIGCONT); return err }

// Running reports whether a node's process is alive (paused counts).
func (c *Cluster) Running(name string) bool {
	n := c.Node(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	return n != nil && n.running
}

// Wipe kills a node and deletes its data directory; the next StartNode
// brings it up as a brand-new server (new Raft ID) that joins the cluster.
func (c *Cluster) Wipe(name string) error {
	if err := c.Kill(name); err != nil {
		return err
	}
	n := c.Node(name)
	if err := os.RemoveAll(n.DataDir); err != nil {
		return fmt.Errorf("wipe %s: %w", name, err)
	}
	c.mu.Lock()
	n.fresh = true
	c.mu.Unlock()
	return nil
}

// SetLink applies faults to traffic from node src to node dst (both the
// Raft and the forwarding proxy in front of dst).
func (c *Cluster) SetLink(src, dst string, f LinkFaults) {
	if n := c.Node(dst); n != nil {
		n.RaftProxy.SetFaults(src, f)
		n.APIProxy.SetFaults(src, f)
	}
}

// Partition cuts every link between nodes of different sides, in both
// directions. Nodes not named in any side keep all their links.
func (c *Cluster) Partition(sides ...[]string) {
	for i, a := range sides {
		for j, b := range sides {
			if i == j {
				continue
			}
			for _, x := range a {
				for _, y := range b {
					c.SetLink(x, y, LinkFaults{Cut: true})
				}
			}
		}
	}
}

// Heal removes every network fault.
func (c *Cluster) Heal() {
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	c.mu.Unlock()
	for _, n := range nodes {
		n.RaftProxy.Heal()
		n.APIProxy.Heal()
	}
}

// askLeader asks one node whom it follows, waiting at most 500ms.
func (c *Cluster) askLeader(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	return c.Client(name).Leader(ctx)
}

// Leader asks every running node for the leader and returns the name most
// of them agree on ("" if none).
func (c *Cluster) Leader(ctx context.Context) string {
	votes := map[string]int{}
	for _, name := range c.Names() {
		if !c.Running(name) {
			continue
		}
		l, err := c.askLeader(ctx, name)
		if err == nil && l != "" {
			votes[l]++
		}
	}
	best, bestN := "", 0
	for _, l := range slices.Sorted(maps.Keys(votes)) {
		if votes[l] > bestN {
			best, bestN = l, votes[l]
		}
	}
	return best
}

// WaitStable waits until every running node names the same leader.
func (c *Cluster) WaitStable(ctx context.Context) error {
	for {
		agree, leader := true, ""
		for _, name := range c.Names() {
			if !c.Running(name) {
				continue
			}
			l, err := c.askLeader(ctx, name)
			if err != nil || l == "" || (leader != "" && l != leader) {
				agree = false
				break
			}
			leader = l
		}
		if agree && leader != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for a stable leader: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RaftID returns the Raft server ID of a node, looked up by its advertised
// Raft (proxy) address in the membership another node reports.
func (c *Cluster) RaftID(ctx context.Context, name string) (string, error) {
	n := c.Node(name)
	if n == nil {
		return "", fmt.Errorf("raft id: unknown node %q", name)
	}
	var last error
	for _, o := range c.Names() {
		if !c.Running(o) {
			continue
		}
		m, err := c.connect(o).Members(ctx)
		if err != nil {
			last = err
			continue
		}
		ids := slices.Sorted(maps.Keys(m))
		for _, id := range ids {
			if m[id] == n.RaftProxy.Addr() {
				return id, nil
			}
		}
	}
	if last != nil {
		return "", fmt.Errorf("raft id of %s: %w", name, last)
	}
	return "", fmt.Errorf("raft id of %s: not a member", name)
}

// RemoveServer removes a node from the Raft configuration, asking each
// running node in turn (followers forward to the leader).
func (c *Cluster) RemoveServer(ctx context.Context, name string) error {
	id, err := c.RaftID(ctx, name)
	if err != nil {
		return err
	}
	var last error
	for _, o := range c.Names() {
		if o == name || !c.Running(o) {
			continue
		}
		if last = c.connect(o).RemoveServer(ctx, id); last == nil {
			return nil
		}
	}
	return fmt.Errorf("remove %s: %w", name, last)
}

// LinkStats returns the connection counts of every proxy.
func (c *Cluster) LinkStats() []LinkStats {
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	c.mu.Unlock()
	var out []LinkStats
	for _, n := range nodes {
		out = append(out, n.RaftProxy.Stats()...)
		out = append(out, n.APIProxy.Stats()...)
	}
	return out
}

// Lists reads every running node's reservations (stale, local reads).
func (c *Cluster) Lists(ctx context.Context) (map[string][]Reservation, error) {
	out := map[string][]Reservation{}
	names := c.Names()
	sort.Strings(names)
	for _, name := range names {
		if !c.Running(name) {
			continue
		}
		l, err := c.Client(name).List(ctx)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", name, err)
		}
		out[name] = l
	}
	return out, nil
}

// Close resumes and kills every node and closes the proxies.
func (c *Cluster) Close() {
	for _, name := range c.Names() {
		_ = c.Resume(name)
		_ = c.Kill(name)
	}
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	c.mu.Unlock()
	for _, n := range nodes {
		if n.RaftProxy != nil {
			n.RaftProxy.Close()
		}
		if n.APIProxy != nil {
			n.APIProxy.Close()
		}
	}
}
