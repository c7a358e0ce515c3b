package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/testbin"
	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// agentProc is one real `ledgerd agent` process.
type agentProc struct {
	name, http, raft, gossip string
	args                     []string
	cmd                      *exec.Cmd
	log                      *bytes.Buffer // read only after exited is closed
	exited                   chan struct{}
	waitErr                  error // set when exited is closed
}

// start runs the agent process (again) with its arguments.
func (p *agentProc) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		p.waitErr = cmd.Wait()
		close(exited)
	}(p.cmd, p.exited)
}

// stop kills the process if it still runs and waits for it.
func (p *agentProc) stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// securePKI is what secures the three agents, made with the binary's own
// `ledgerd tls` and `ledgerd keygen` commands the way docs/operations.md
// ("Securing a cluster") tells an operator to: a CA, a server certificate
// per head node, a gossip key and a tokens file with an operator token.
type securePKI struct {
	dir, ca, gossipKey, tokensFile, token string
	tls                                   *tls.Config // what clients dial the agents with
}

func makePKI(t *testing.T, bin string, nodes []string) *securePKI {
	t.Helper()
	p := &securePKI{dir: t.TempDir(), token: "e2e-operator-token"}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ledgerd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("tls", "ca", "create", "-dir", p.dir)
	p.ca = filepath.Join(p.dir, "ledgerd-ca.pem")
	for _, n := range nodes {
		run("tls", "cert", "create", "-server", "-node", n, "-ip", "127.0.0.1", "-dir", p.dir,
			"-ca", p.ca, "-ca-key", filepath.Join(p.dir, "ledgerd-ca-key.pem"))
	}
	p.gossipKey = strings.TrimSpace(run("keygen"))
	p.tokensFile = filepath.Join(p.dir, "tokens.json")
	if err := os.WriteFile(p.tokensFile, []byte(`{"tokens":[{"token":"`+p.token+`","tenant":"ops","operator":true}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", p.ca)
	}
	p.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	return p
}

// args are the flags that secure agent node.
func (p *securePKI) args(node string) []string {
	return []string{"-tls-cert-file", filepath.Join(p.dir, "server-"+node+".pem"), "-tls-key-file", filepath.Join(p.dir, "server-"+node+"-key.pem"),
		"-tls-ca-file", p.ca, "-tls-verify-incoming=true", "-tls-http=true", "-gossip-key", p.gossipKey, "-tokens-file", p.tokensFile}
}

// client is an API client of the given agents (token, https).
func (p *securePKI) client(t *testing.T, procs ...*agentProc) *client.Client {
	t.Helper()
	var addrs []string
	for _, a := range procs {
		addrs = append(addrs, a.http)
	}
	// A copy each time: the client's HTTP/2 transport adds "h2" to the
	// configuration's ALPN list, which would break HTTP/1.1 users of it.
	c, err := client.New(addrs, client.Options{Token: p.token, TLS: p.tls.Clone(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startAgents starts three secured agents that bootstrap together and
// waits until each is ready. Ports are reserved (see testnet), but an
// unrelated program may still have bound one, which only shows as an
// agent exiting: then all three start over on fresh ports and data
// directories.
func startAgents(t *testing.T, bin string, sec *securePKI) []*agentProc {
	t.Helper()
	return startAgentsWith(t, bin, sec, nil)
}

// startAgentsWith is startAgents with extra arguments for every agent.
func startAgentsWith(t *testing.T, bin string, sec *securePKI, extra []string) []*agentProc {
	t.Helper()
	var procs []*agentProc
	testnet.Start(t, 9, func(a []string) error {
		data := t.TempDir()
		procs = make([]*agentProc, 3)
		for i := range procs {
			procs[i] = &agentProc{name: fmt.Sprintf("head-%d", i+1), http: a[3*i], raft: a[3*i+1], gossip: a[3*i+2], log: new(bytes.Buffer)}
		}
		for i, p := range procs {
			args := []string{"agent", "-node-name", p.name, "-data-dir", filepath.Join(data, p.name),
				"-http-addr", p.http, "-raft-addr", p.raft, "-gossip-addr", p.gossip, "-bootstrap-expect", "3",
				"-dead-server-grace", "5s", "-log-format", "json"}
			args = append(append(args, sec.args(p.name)...), extra...)
			for j, o := range procs {
				if j != i {
					args = append(args, "-retry-join", o.gossip)
				}
			}
			p.args = args
			p.start(t, bin)
		}
		if err := waitReady(procs, sec.tls, 60*time.Second); err != nil {
			for _, p := range procs {
				p.stop()
			}
			return err
		}
		return nil
	})
	return procs
}

// waitReady waits until every agent answers /readyz with 200 over https,
// or fails with the log of the first that exits: one that cannot bind a
// port exits while the others wait for it forever.
func waitReady(procs []*agentProc, conf *tls.Config, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: conf.Clone()}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	ready := map[*agentProc]bool{}
	for {
		var last error
		for _, p := range procs {
			select {
			case <-p.exited:
				return fmt.Errorf("%s exited before ready (%v): %s", p.name, p.waitErr, tail(p.log.String(), 2000))
			default:
			}
			if ready[p] {
				continue
			}
			resp, err := hc.Get("https://" + p.http + "/readyz")
			if err != nil {
				last = err
				continue
			}
			resp.Body.Close()
			if ready[p] = resp.StatusCode == http.StatusOK; !ready[p] {
				last = fmt.Errorf("%s: /readyz: %s", p.name, resp.Status)
			}
		}
		if last == nil && len(ready) == len(procs) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agents not ready after %s (last: %v)", timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestThreeAgentProcesses starts three secured `ledgerd agent
// -bootstrap-expect 3` processes on loopback (mutual TLS between them,
// https and a token for clients, PKI made with `ledgerd tls`), writes
// through the public API with the Go client, SIGKILLs the leader, and
// checks that the survivors elect a new leader, keep every acknowledged
// write and keep accepting writes; that the killed leader restarts and
// catches up; and that SIGTERM gives a clean exit. It builds the binary,
// so it only runs with LEDGERD_E2E=1 (scripts/three-nodes.sh sets it).
func TestThreeAgentProcesses(t *testing.T) {
	bin := e2eBinary(t)
	start := time.Now()
	sec := makePKI(t, bin, []string{"head-1", "head-2", "head-3"})
	procs := startAgents(t, bin, sec)
	stopWithLogs(t, procs)
	t.Logf("three secured agents ready in %s", time.Since(start).Round(time.Millisecond))

	// Without a token the API refuses; over plain http nothing answers.
	anon, err := client.New([]string{procs[0].http}, client.Options{TLS: sec.tls.Clone(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = anon.Resources(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "unauthenticated") {
		t.Fatalf("resources without a token: %v, want unauthenticated", err)
	}
	if resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + procs[0].http + "/readyz"); err == nil && resp.StatusCode == http.StatusOK {
		resp.Body.Close()
		t.Fatal("/readyz answered 200 over plain http")
	}

	leader := findLeader(t, sec, procs)
	mustDo(t, sec, procs, "create cpu", func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateResource(ctx, &ledgerdv1.Resource{Name: "cpu", Capacity: 128, Unit: "cores"})
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil // an earlier attempt's answer was lost
		}
		return err
	})
	acked := map[string]string{} // idempotency key -> reservation id
	from := time.Now()
	for i := range 10 {
		key := fmt.Sprintf("before-%d", i)
		acked[key] = mustReserve(t, sec, procs, key, from)
	}

	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	var alive []*agentProc
	for _, p := range procs {
		if p != leader {
			alive = append(alive, p)
		}
	}
	// A survivor stops calling the killed leader alive in `members` as soon
	// as its status probes fail, before gossip declares it failed.
	survivor := sec.client(t, alive[0])
	var health string
	testwait.Until(t, 30*time.Second, "a survivor to stop reporting the killed leader alive", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ms, err := survivor.Members(ctx)
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.GetApiAddress() == leader.http {
				health = m.GetStatus()
				return health != "alive" && !m.GetHealthy()
			}
		}
		return false
	})
	t.Logf("members on %s: killed leader %s is %q %s after the SIGKILL", alive[0].name, leader.name, health, time.Since(killed).Round(time.Millisecond))
	newLeader := findLeader(t, sec, alive)
	t.Logf("leader %s killed; %s leads after %s", leader.name, newLeader.name, time.Since(killed).Round(time.Millisecond))
	for i := range 10 {
		key := fmt.Sprintf("after-%d", i)
		acked[key] = mustReserve(t, sec, alive, key, from)
	}
	// Every acknowledged reservation is still there: replaying its
	// idempotency key returns the stored first result.
	for key, id := range acked {
		if got := mustReserve(t, sec, alive, key, from); got != id {
			t.Fatalf("reservation %s (%s) lost after leader crash: a replay booked %s", key, id, got)
		}
	}
	t.Logf("%d acknowledged writes survived the leader's SIGKILL", len(acked))

	// The killed leader restarts on its data and catches up with
	// everything committed while it was down: its own (stale, local)
	// list holds every acknowledged reservation.
	leader.log.Reset() // the process has exited: nothing writes to it
	leader.start(t, bin)
	if err := waitReady([]*agentProc{leader}, sec.tls, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	local := sec.client(t, leader)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		list, err := local.ListAll(ctx, &ledgerdv1.ListRequest{Stale: true})
		cancel()
		have := map[string]bool{}
		for _, r := range list {
			have[r.GetId()] = true
		}
		missing := 0
		for _, id := range acked {
			if !have[id] {
				missing++
			}
		}
		if err == nil && missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted %s still misses %d of %d acknowledged reservations (last error %v)", leader.name, missing, len(acked), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("restarted %s caught up: it holds all %d acknowledged reservations", leader.name, len(acked))

	// SIGTERM leaves cleanly.
	p := alive[0]
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("%s exited after SIGTERM: %v", p.name, p.waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30s of SIGTERM", p.name)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// findLeader returns the agent that the agents agree leads, asking each
// through the public ClusterService.
func findLeader(t *testing.T, sec *securePKI, procs []*agentProc) *agentProc {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			l, err := sec.client(t, p).Leader(ctx)
			cancel()
			if err != nil {
				continue
			}
			for _, q := range procs {
				if l.GetApiAddress() == q.http {
					return q
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no leader within 30s")
	return nil
}

// mustDo runs op with a client of procs until it succeeds, retrying
// failures (no leader yet, a node that is gone) for 30 seconds.
func mustDo(t *testing.T, sec *securePKI, procs []*agentProc, what string, op func(context.Context, *client.Client) error) {
	t.Helper()
	c := sec.client(t, procs...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := op(ctx, c)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mustReserve books 4 cores for an hour with idempotency key key and
// returns the reservation's id; retries reuse the key and the request
// (window from now), so a lost answer never books twice.
func mustReserve(t *testing.T, sec *securePKI, procs []*agentProc, key string, now time.Time) string {
	t.Helper()
	var id string
	mustDo(t, sec, procs, "reserve "+key, func(ctx context.Context, c *client.Client) error {
		r, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: key, Shape: &ledgerdv1.Shape{
			Parts:    []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 4}},
			Duration: durationpb.New(time.Hour), NotBefore: timestamppb.New(now), Deadline: timestamppb.New(now.Add(24 * time.Hour)),
		}})
		if err != nil {
			return err
		}
		if r.GetId() == "" {
			return errors.New("no reservation id in the answer")
		}
		id = r.GetId()
		return nil
	})
	return id
}

// e2eBinary skips the test unless LEDGERD_E2E is set and returns the
// ledgerd binary (testbin: built once per test run for every process
// test).
func e2eBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv("LEDGERD_E2E") == "" {
		t.Skip("set LEDGERD_E2E=1 (or run scripts/three-nodes.sh) to start real agent processes")
	}
	return testbin.Ledgerd(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// stopWithLogs stops procs when the test ends, logging the tail of each
// one's log if the test failed.
func stopWithLogs(t *testing.T, procs []*agentProc) {
	t.Cleanup(func() {
		for _, p := range procs {
			p.stop()
			if t.Failed() {
				t.Logf("--- %s log (tail) ---\n%s", p.name, tail(p.log.String(), 3000))
			}
		}
	})
}
