package upgradetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/testbin"
	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/rpc/client"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// previousRelease is the commit of the release this tree upgrades from.
// Move it forward with every release.
const previousRelease = "ee65182"

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// unavailable skips t because the old binary cannot be built here, or
// fails it under CI=true, where the toolchain and history must be there.
func unavailable(t *testing.T, err error) {
	t.Helper()
	msg := fmt.Sprintf("ROLLING-UPGRADE TEST NOT RUN: cannot build the previous release %s: %v "+
		"(needs git history and a Go toolchain; CI=true turns this skip into a failure)", previousRelease, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestRollingUpgradeFromPreviousRelease walks a three-server cluster
// through a rolling upgrade from the previous release to this tree, and at
// every step books through every server with the ledgerd command line
// (reserve, hold + commit) and reads every booking back from every server
// (list):
//
//  1. three old servers;
//  2. the two followers restarted on the new binary: an old leader with
//     new followers, which forward to its /internal/applybatch;
//  3. leadership handed to a new server (operator raft transfer-leader):
//     a new leader with an old follower, which forwards single writes to
//     the deprecated /internal/apply;
//  4. the last old server restarted on the new binary.
//
// Writes through a follower must show in its forwarded-writes counter, so
// the test cannot pass by the client reaching the leader directly.
//
// Each step also sends a burst of concurrent reserves through this tree's
// coalescing Go client (burstThroughLeader). While a server of the
// previous release is a member, a new leader must write them one entry
// each (that server cannot apply a group entry); once all three run this
// tree, some must share entries (group commit, envelope version 5).
//
// The mixed cluster runs secured throughout, with the keys both releases
// know: server certificates with the server role (which the new servers
// require of their peers; the old ones verify them by IP address, which
// every certificate carries), tls_verify_incoming, tls_http, a gossip key
// and a tokens file. The old release has neither insecure nor
// tls_http_require_client_cert, and with tls_verify_incoming and tls_http
// it requires a client certificate of every API caller, so the command
// line and the test's own requests present one as well as the token.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and starts agent processes; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		unavailable(t, err)
	}
	type built struct {
		bin, commit string
		took        time.Duration
		err         error
	}
	oldc := make(chan built, 1)
	dir := t.TempDir()
	go func() {
		start := time.Now()
		bin, commit, err := testbin.AtRevision(previousRelease, dir)
		oldc <- built{bin, commit, time.Since(start), err}
	}()
	start := time.Now()
	newBin := testbin.Ledgerd(t)
	t.Logf("built this tree's ledgerd in %s", time.Since(start).Round(time.Millisecond))
	old := <-oldc
	if errors.Is(old.err, testbin.ErrUnavailable) {
		unavailable(t, old.err)
	}
	if old.err != nil {
		t.Fatal(old.err)
	}
	t.Logf("built the previous release's ledgerd (%s) in %s (concurrently with this tree's)", old.commit[:12], old.took.Round(time.Millisecond))

	sec := newSecurity(t)
	cli := &cli{t: t, bin: newBin, sec: sec}
	clusterStart := time.Now()
	agents := startAgents(t, old.bin, sec)
	t.Logf("three %s agents ready in %s", "old", time.Since(clusterStart).Round(time.Millisecond))
	leader := findLeader(t, agents, nil)
	cli.run("resources", "create", "cpu", "-capacity", "100000", "-addr", leader.http)

	var booked []string
	check := func(phase string, groups groupWant) {
		t.Helper()
		booked = append(booked, burstThroughLeader(t, agents, sec, phase, groups)...)
		l := findLeader(t, agents, nil)
		t.Logf("%s: leader %s", phase, l)
		for _, a := range agents {
			before := forwarded(t, a)
			key := fmt.Sprintf("%s-via-%s", phase, a.name)
			r := cli.reservation("reserve", "-addr", a.http, "-key", key+"-r", "-res", "cpu=1", "-dur", "1h", "-after", "+1h")
			if r.State != "RESERVATION_STATE_COMMITTED" {
				t.Fatalf("%s: reserve through %s: %+v, want a committed reservation", phase, a, r)
			}
			h := cli.reservation("hold", "-addr", a.http, "-key", key+"-h", "-res", "cpu=1", "-dur", "1h", "-after", "+1h", "-ttl", "10m")
			if h.State != "RESERVATION_STATE_HELD" {
				t.Fatalf("%s: hold through %s: %+v, want a held reservation", phase, a, h)
			}
			c := cli.reservation("commit", h.ID, "-addr", a.http)
			if c.ID != h.ID || c.State != "RESERVATION_STATE_COMMITTED" {
				t.Fatalf("%s: commit %s through %s: %+v, want it committed", phase, h.ID, a, c)
			}
			booked = append(booked, r.ID, h.ID)
			if a != l {
				if after := forwarded(t, a); after < before+3 {
					if now := findLeader(t, agents, nil); now != l {
						// An election on a loaded machine moved the leader
						// while these writes ran: some were not forwarded.
						// They were acknowledged all the same; the listing
						// below still checks every one on every server.
						t.Logf("%s: leadership moved from %s to %s during the writes through %s; its forwarding count (%d) is not checked", phase, l, now, a, after-before)
						l = now
					} else {
						t.Fatalf("%s: follower %s forwarded %d writes for 3 writes through it", phase, a, after-before)
					}
				}
			}
		}
		for _, a := range agents {
			got := map[string]string{}
			for _, r := range cli.reservations("list", "-all", "-addr", a.http) {
				got[r.ID] = r.State
			}
			for _, id := range booked {
				if got[id] != "RESERVATION_STATE_COMMITTED" {
					t.Fatalf("%s: %s lists %s as %q, want committed (%d listed, %d booked)", phase, a, id, got[id], len(got), len(booked))
				}
			}
		}
		t.Logf("%s: 9 writes through 3 servers acknowledged; all %d bookings listed committed on every server", phase, len(booked))
	}

	check("all-old", groupsUnknown)
	for _, a := range agents {
		if a != leader {
			a.restart(t, newBin, "new")
		}
	}
	if l := findLeader(t, agents, nil); l != leader {
		// An election on a loaded machine; the writes below still go
		// through every server of the mixed cluster.
		t.Logf("leadership moved from %s to %s while the followers were upgraded: the old-leader phase runs under %s this time", leader, l, l)
		leader = l
	}
	check("old-leader-new-followers", groupsUnknown)

	// The one server still on the old release.
	var oldOne *agent
	for _, a := range agents {
		if a.version == "old" {
			oldOne = a
		}
	}
	if leader == oldOne {
		cli.run("operator", "raft", "transfer-leader", "-addr", leader.http)
		newLeader := findLeader(t, agents, func(a *agent) bool { return a != oldOne })
		if newLeader.version != "new" {
			t.Fatalf("leader after the transfer is %s, want a new server", newLeader)
		}
	}
	check("new-leader-old-follower", groupsNone)
	// A new leader configured with a retention must not propose it while
	// a server of the previous release, which could not apply it, is a
	// member: the new servers still report none in force.
	for _, a := range agents {
		if a.version == "new" {
			if got, _ := metric(t, a, "ledgerd_fsm_ended_max"); got != 0 {
				t.Fatalf("%s: ended_max %d in force while %s runs the previous release", a, got, oldOne)
			}
		}
	}

	oldOne.restart(t, newBin, "new")
	check("all-new", groupsSome)
	// Now every server applies version 6: the leader puts the configured
	// retention into force, at a tick that the writes below make come.
	writes := 0
	testwait.Every(t, 60*time.Second, time.Second, "the configured retention in force on every server", func() bool {
		for _, a := range agents {
			limit, _ := metric(t, a, "ledgerd_fsm_ended_max")
			secs, _ := metric(t, a, "ledgerd_fsm_ended_retention_seconds")
			if limit != 1000 || secs != 48*3600 {
				writes++
				cli.reservation("reserve", "-addr", a.http, "-res", "cpu=1", "-dur", "1h", "-after", "+1h")
				return false
			}
		}
		return true
	})
	t.Logf("all-new: ended_retention 48h and ended_max 1000 in force on every server (%d nudging writes)", writes)
	t.Logf("rolling upgrade from %s: %d bookings, cluster phases took %s", old.commit[:12], len(booked), time.Since(clusterStart).Round(time.Millisecond))
}

// security is the material that secures the mixed cluster, made with
// agent/pki (what `ledgerd tls` uses), and the credentials of the test's
// own API calls.
type security struct {
	dir, ca, gossipKey, tokensFile, token string
	clientCert, clientKey                 string
	tls                                   *tls.Config // CA and client certificate
}

func newSecurity(t *testing.T) *security {
	t.Helper()
	s := &security{dir: t.TempDir(), gossipKey: "dXBncmFkZS10ZXN0LW9ubHktZ29zc2lwLWtleS0zMmI=", token: "upgrade-test-operator"}
	now := time.Now()
	ca, err := pki.NewCA("upgrade test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s.ca = write("ca.pem", ca.CertPEM)
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("head-%d", i)
		c, k, err := ca.Issue(pki.Request{Server: true, Name: name, Now: now, ValidFor: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pem", c)
		write(name+"-key.pem", k)
	}
	c, k, err := ca.Issue(pki.Request{Name: "upgrade-test", Now: now, ValidFor: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s.clientCert, s.clientKey = write("client.pem", c), write("client-key.pem", k)
	s.tokensFile = write("tokens.json", []byte(`{"tokens":[{"token":"`+s.token+`","tenant":"ops","operator":true}]}`))
	kp, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	s.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, Certificates: []tls.Certificate{kp}}
	return s
}

// args are the agent flags that secure server name, in both releases.
func (s *security) args(name string) []string {
	return []string{"-tls-cert-file", filepath.Join(s.dir, name+".pem"), "-tls-key-file", filepath.Join(s.dir, name+"-key.pem"),
		"-tls-ca-file", s.ca, "-tls-verify-incoming=true", "-tls-http=true", "-gossip-key", s.gossipKey, "-tokens-file", s.tokensFile}
}

// httpClient speaks https to the agents with the client certificate.
// Each caller gets its own copy of the configuration: an HTTP/2 transport
// adds to its ALPN list.
func (s *security) httpClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tls.Clone()}}
}

// cli runs this tree's ledgerd command line.
type cli struct {
	t   *testing.T
	bin string
	sec *security
}

// run runs one command and returns its standard output; a non-zero exit
// fails the test.
func (c *cli) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	// The addresses come from -addr only; the credentials are the
	// test's: https against its CA, its client certificate (which the old
	// release requires of API callers) and the operator token.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGERD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LEDGERD_CACERT="+c.sec.ca, "LEDGERD_CLIENT_CERT="+c.sec.clientCert,
		"LEDGERD_CLIENT_KEY="+c.sec.clientKey, "LEDGERD_TOKEN="+c.sec.token)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("ledgerd %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// reservationJSON is the part of a printed reservation the test reads.
type reservationJSON struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// reservations runs a command with -json and decodes one reservation per
// output line.
func (c *cli) reservations(args ...string) []reservationJSON {
	c.t.Helper()
	out := c.run(append(args, "-json")...)
	var rs []reservationJSON
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r reservationJSON
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			c.t.Fatalf("ledgerd %s: bad JSON line %q: %v", strings.Join(args, " "), line, err)
		}
		if r.ID != "" {
			rs = append(rs, r)
		}
	}
	return rs
}

// reservation runs a command that prints exactly one reservation.
func (c *cli) reservation(args ...string) reservationJSON {
	c.t.Helper()
	rs := c.reservations(args...)
	if len(rs) != 1 {
		c.t.Fatalf("ledgerd %s printed %d reservations, want 1", strings.Join(args, " "), len(rs))
	}
	return rs[0]
}

// agent is one `ledgerd agent` process, restartable on another binary
// with the same data and addresses.
type agent struct {
	name, http, raft, gossip string
	args                     []string
	newArgs                  []string // added on this tree's binary only
	sec                      *security
	version                  string // "old" or "new": the binary it runs
	cmd                      *exec.Cmd
	log                      *syncBuffer
	exited                   chan struct{}
	waitErr                  error // set when exited is closed
}

func (a *agent) String() string { return a.name + " (" + a.version + ")" }

func (a *agent) start(t *testing.T, bin, version string) {
	t.Helper()
	a.version = version
	args := a.args
	if version == "new" {
		args = append(slices.Clone(args), a.newArgs...)
	}
	a.cmd = exec.Command(bin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", a, err)
	}
	a.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		a.waitErr = cmd.Wait()
		close(exited)
	}(a.cmd, a.exited)
}

// stop kills the process if it still runs and waits for it to exit.
func (a *agent) stop() {
	if a.cmd == nil {
		return
	}
	select {
	case <-a.exited:
	default:
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// restart kills the agent (nothing acknowledged is lost: raft.db is
// synced before an acknowledgement) and starts it on bin with the same
// data and addresses, then waits until it is ready again.
func (a *agent) restart(t *testing.T, bin, version string) {
	t.Helper()
	was := a.String()
	a.stop()
	fmt.Fprintf(a.log, "\n--- restarted on the %s binary ---\n", version)
	a.start(t, bin, version)
	start := time.Now()
	if err := waitReady([]*agent{a}, a.sec, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s restarted as %s, ready in %s", was, a, time.Since(start).Round(time.Millisecond))
}

// startAgents starts three secured agents on bin that bootstrap together,
// on fresh loopback ports (testnet), and waits until each is ready.
func startAgents(t *testing.T, bin string, sec *security) []*agent {
	t.Helper()
	var agents []*agent
	testnet.Start(t, 9, func(addrs []string) error {
		data := t.TempDir()
		agents = make([]*agent, 3)
		for i := range agents {
			agents[i] = &agent{name: fmt.Sprintf("head-%d", i+1), http: addrs[3*i], raft: addrs[3*i+1], gossip: addrs[3*i+2], log: &syncBuffer{}, sec: sec}
		}
		for i, a := range agents {
			a.args = []string{"agent", "-node-name", a.name, "-data-dir", filepath.Join(data, a.name),
				"-http-addr", a.http, "-raft-addr", a.raft, "-gossip-addr", a.gossip, "-bootstrap-expect", "3",
				// Restarts take seconds; a server must not be removed
				// as dead in between.
				"-dead-server-grace", "2m"}
			a.args = append(a.args, sec.args(a.name)...)
			// Settings the previous release does not know: the leader
			// may put them into the log only once every server runs
			// this tree (retention, envelope version 6).
			a.newArgs = []string{"-ended-retention", "48h", "-ended-max", "1000"}
			for j, o := range agents {
				if j != i {
					a.args = append(a.args, "-retry-join", o.gossip)
				}
			}
			a.start(t, bin, "old")
		}
		if err := waitReady(agents, sec, 60*time.Second); err != nil {
			for _, a := range agents {
				a.stop()
			}
			return err
		}
		return nil
	})
	t.Cleanup(func() {
		for _, a := range agents {
			a.stop()
			if t.Failed() {
				t.Logf("--- %s log (tail) ---\n%s", a, tail(a.log.String(), 4000))
			}
		}
	})
	return agents
}

// waitReady waits until every agent answers /readyz with 200 over https,
// or fails with the log of the first that exits.
func waitReady(agents []*agent, sec *security, timeout time.Duration) error {
	hc := sec.httpClient()
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	ready := map[*agent]bool{}
	for {
		var last error
		for _, a := range agents {
			select {
			case <-a.exited:
				return fmt.Errorf("%s exited before ready (%v): %s", a, a.waitErr, tail(a.log.String(), 2000))
			default:
			}
			if ready[a] {
				continue
			}
			resp, err := hc.Get("https://" + a.http + "/readyz")
			if err != nil {
				last = err
				continue
			}
			resp.Body.Close()
			if ready[a] = resp.StatusCode == http.StatusOK; !ready[a] {
				last = fmt.Errorf("%s: /readyz: %s", a, resp.Status)
			}
		}
		if last == nil && len(ready) == len(agents) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agents not ready after %s (last: %v)", timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// findLeader waits until every agent names the same leader, one of the
// agents, through the public ClusterService.Leader (both releases have
// it), and it satisfies want (if given).
func findLeader(t *testing.T, agents []*agent, want func(*agent) bool) *agent {
	t.Helper()
	var leader *agent
	testwait.Every(t, 30*time.Second, 50*time.Millisecond, "a leader that every agent agrees on", func() bool {
		leader = nil
		agree := true
		for _, a := range agents {
			l, err := leaderSeenBy(a)
			if err != nil {
				agree = false
				break
			}
			var named *agent
			for _, b := range agents {
				if b.http == l {
					named = b
				}
			}
			if named == nil || (leader != nil && named != leader) {
				agree = false
				break
			}
			leader = named
		}
		return agree && leader != nil && (want == nil || want(leader))
	})
	return leader
}

// leaderSeenBy returns the API address of the leader agent a names.
func leaderSeenBy(a *agent) (string, error) {
	c, err := client.New([]string{a.http}, client.Options{Token: a.sec.token, TLS: a.sec.tls.Clone(), MaxAttempts: 1})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := c.Leader(ctx)
	if err != nil {
		return "", err
	}
	return l.GetApiAddress(), nil
}

// forwarded reads the agent's ledgerd_forwarded_writes_total.
func forwarded(t *testing.T, a *agent) int {
	t.Helper()
	v, ok := metric(t, a, "ledgerd_forwarded_writes_total")
	if !ok {
		t.Fatalf("%s: /metrics has no ledgerd_forwarded_writes_total", a)
	}
	return v
}

// metric reads one unlabelled counter or gauge from a's /metrics; ok is
// false when a does not export it.
func metric(t *testing.T, a *agent, name string) (int, bool) {
	t.Helper()
	hc := a.sec.httpClient()
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + a.http + "/metrics")
	if err != nil {
		t.Fatalf("%s: /metrics: %v", a, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %s %q: %v", a, name, v, err)
			}
			return int(f), true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: reading /metrics: %v", a, err)
	}
	return 0, false
}

// groupWant is what a phase expects of group commit (several admissions
// in one log entry, envelope version 5), which a leader may use only once
// every server announces that it can apply it.
type groupWant int

const (
	// groupsUnknown: the leader may run a release without group commit.
	groupsUnknown groupWant = iota
	// groupsNone: a server of the previous release is a member, so the
	// leader must write one entry per admission.
	groupsNone
	// groupsSome: every server runs this tree, so a burst of concurrent
	// admissions must share entries.
	groupsSome
)

// burstSize is how many reserves burstThroughLeader sends at once.
const burstSize = 24

// burstThroughLeader sends burstSize concurrent reserves through this
// tree's Go client, which coalesces them into Batch calls, and returns
// the booked IDs. It checks the leader's group counter against want. For
// groupsSome it repeats the burst until the leader has written a group
// entry: the last server's new gossip metadata takes a moment to reach
// the leader after its restart, and the leader proposes groups only
// once it has. It fails the test if none appears within a minute.
func burstThroughLeader(t *testing.T, agents []*agent, sec *security, phase string, want groupWant) []string {
	t.Helper()
	addrs := make([]string, len(agents))
	for i, a := range agents {
		addrs[i] = a.http
	}
	c, err := client.New(addrs, client.Options{Token: sec.token, TLS: sec.tls.Clone()})
	if err != nil {
		t.Fatalf("%s: client: %v", phase, err)
	}
	var ids []string
	deadline := time.Now().Add(time.Minute)
	for round := 0; ; round++ {
		l := findLeader(t, agents, nil)
		before, _ := metric(t, l, "ledgerd_group_entries_total")
		ids = append(ids, reserveBurst(t, c, fmt.Sprintf("%s-burst%d", phase, round))...)
		after, exported := metric(t, l, "ledgerd_group_entries_total")
		if now := findLeader(t, agents, nil); now != l {
			t.Logf("%s: leadership moved from %s to %s during the burst; its group count is not checked", phase, l, now)
			continue
		}
		switch want {
		case groupsNone:
			if after != before {
				t.Fatalf("%s: leader %s wrote %d group entries while a server of the previous release is a member", phase, l, after-before)
			}
			t.Logf("%s: %d concurrent reserves through %s, no group entry (an old server is a member)", phase, burstSize, l)
			return ids
		case groupsSome:
			if !exported {
				t.Fatalf("%s: leader %s exports no ledgerd_group_entries_total", phase, l)
			}
			if after > before {
				t.Logf("%s: %d concurrent reserves through %s shared %d group entries (burst %d)", phase, burstSize, l, after-before, round+1)
				return ids
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d bursts of %d concurrent reserves, and leader %s wrote no group entry in a minute", phase, round+1, burstSize, l)
			}
		default:
			return ids
		}
	}
}

// reserveBurst books burstSize reservations at once and returns their IDs.
func reserveBurst(t *testing.T, c *client.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := make([]string, burstSize)
	errs := make([]error, burstSize)
	var wg sync.WaitGroup
	for i := range burstSize {
		wg.Go(func() {
			r, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: fmt.Sprintf("%s-%d", prefix, i), Shape: &ledgerdv1.Shape{
				Parts:    []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}},
				Duration: durationpb.New(time.Hour), NotBefore: timestamppb.New(time.Now().Add(time.Hour)),
			}})
			if err == nil && r.GetState() != ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED {
				err = fmt.Errorf("state %s, want committed", r.GetState())
			}
			ids[i], errs[i] = r.GetId(), err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: reserve %d of the burst: %v", prefix, i, err)
		}
	}
	return ids
}

// syncBuffer is a bytes.Buffer the process writes to while the test may
// read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
