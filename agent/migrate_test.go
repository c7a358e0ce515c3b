package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/cluster"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestSecureMigrationConfig: secure_migration is a stage of an insecure
// agent that already carries every secure setting; anything else is
// refused with an error naming the key.
func TestSecureMigrationConfig(t *testing.T) {
	p := newTestPKI(t)
	secure := p.serverArgs(t, "s0")
	base := []string{"-data-dir", t.TempDir()}
	for _, c := range []struct {
		name string
		args []string
		want string // "" = accepted
	}{
		{"accept stage", slices.Concat(secure, []string{"-insecure", "-secure-migration", "accept"}), ""},
		{"send stage", slices.Concat(secure, []string{"-insecure", "-secure-migration", "send"}), ""},
		{"accept without insecure", slices.Concat(secure, []string{"-secure-migration", "accept"}), "secure_migration: \"accept\" still accepts plaintext peers and callers, so it needs -insecure"},
		{"send without insecure", slices.Concat(secure, []string{"-secure-migration", "send"}), "secure_migration: \"send\" still accepts plaintext peers and callers, so it needs -insecure"},
		{"unknown stage", slices.Concat(secure, []string{"-insecure", "-secure-migration", "prefer"}), "secure_migration: want accept or send"},
		{"without the secure settings", []string{"-insecure", "-secure-migration", "accept"}, "secure_migration: every setting of a secure agent must be in place first"},
		{"without a gossip key", slices.Concat(secure[:len(secure)-2], secure[len(secure)-1:], []string{"-insecure", "-secure-migration", "accept"}), "gossip_key: required"},
		{"with -dev", []string{"-dev", "-secure-migration", "accept"}, "secure_migration: not used with -dev"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseArgs(slices.Concat(base, c.args), func(string) string { return "" }, io.Discard)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

// migrationTimings shortens elections and membership so that nine
// restarts fit in a test.
func migrationTimings(c *cluster.Config) {
	c.HeartbeatTimeout = 200 * time.Millisecond
	c.ElectionTimeout = 200 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.ReconcileInterval = 200 * time.Millisecond
	c.ServerStabilizationTime = 400 * time.Millisecond
	c.LeaderWait = 5 * time.Second
	c.ForwardTimeout = 5 * time.Second
}

// migNode is one server of TestRollingMoveToSecure.
type migNode struct {
	name, http, raft, gossip, data string
	secure                         []string // the flags of a secure server
	agent                          *Agent
	stop                           func()
}

// The stages of the move, as each server is restarted into them.
var migrationStageArgs = []func(secure []string) []string{
	func([]string) []string { return []string{"-insecure"} },
	func(s []string) []string { return slices.Concat(s, []string{"-insecure", "-secure-migration=accept"}) },
	func(s []string) []string { return slices.Concat(s, []string{"-insecure", "-secure-migration=send"}) },
	func(s []string) []string { return slices.Clone(s) },
}

// TestRollingMoveToSecure moves a running insecure three-server cluster
// to a secure one by restarting each server three times (stage 1
// secure_migration=accept, stage 2 secure_migration=send, stage 3
// secure), while a writer books continuously through the public API.
// After each restart the cluster must agree on a leader with all three
// servers voting and must acknowledge new writes; at the end every
// acknowledged write is on every server, and a plaintext Raft peer and a
// plaintext /internal/ caller are refused.
func TestRollingMoveToSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a three-server cluster nine times")
	}
	began := time.Now()
	p := newTestPKI(t)
	nodes := make([]*migNode, 3)
	startNode := func(nd *migNode, stage int, peers []*migNode) error {
		args := []string{
			"-node-name", nd.name, "-data-dir", nd.data, "-log-level", "error",
			"-http-addr", nd.http, "-raft-addr", nd.raft, "-gossip-addr", nd.gossip, "-bootstrap-expect", "3",
		}
		for _, o := range peers {
			if o != nd {
				args = append(args, "-retry-join", o.gossip)
			}
		}
		cfg, _, err := ParseArgs(slices.Concat(args, migrationStageArgs[stage](nd.secure)), func(string) string { return "" }, io.Discard)
		if err != nil {
			return fmt.Errorf("%s stage %d: %w", nd.name, stage, err)
		}
		a, err := New(cfg, Options{Logger: cfg.NewLogger(io.Discard), Cluster: migrationTimings})
		if err != nil {
			return fmt.Errorf("%s stage %d: %w", nd.name, stage, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, io.Discard) }()
		nd.agent = a
		nd.stop = func() {
			cancel()
			<-done
			nd.stop = nil
		}
		return nil
	}
	stopAll := func() {
		for _, nd := range nodes {
			if nd != nil && nd.stop != nil {
				nd.stop()
			}
		}
	}
	t.Cleanup(stopAll)
	data := t.TempDir()
	// Ports are reserved for the life of the test process (see testnet),
	// so restarts bind the same ones again; only the first start may
	// meet a port an unrelated program took, and then starts over.
	testnet.Start(t, 9, func(a []string) error {
		for i := range nodes {
			name := fmt.Sprintf("s%d", i)
			nodes[i] = &migNode{name: name, http: a[3*i], raft: a[3*i+1], gossip: a[3*i+2], data: filepath.Join(data, name), secure: p.serverArgs(t, name)}
		}
		for _, nd := range nodes {
			if err := startNode(nd, 0, nodes); err != nil {
				stopAll()
				return err
			}
		}
		return nil
	})

	// waitCluster waits until every server names the same leader and the
	// leader counts all three servers as live voters.
	waitCluster := func(what string) {
		t.Helper()
		testwait.Until(t, 20*time.Second, what, func() bool {
			var leader string
			for _, nd := range nodes {
				id, _ := nd.agent.Node().Leader()
				if id == "" || leader != "" && id != leader || !nd.agent.Node().Ready() {
					return false
				}
				leader = id
			}
			for _, nd := range nodes {
				if nd.agent.Node().ID() != leader {
					continue
				}
				voters := 0
				for _, m := range nd.agent.Node().Members() {
					if (m.Role == "leader" || m.Role == "voter") && m.Health == "alive" {
						voters++
					}
				}
				return voters == 3
			}
			return false
		})
	}
	waitCluster("an insecure three-server cluster")

	// Clients carry a token from the start (insecure servers ignore it)
	// and switch to https once every server takes TLS.
	addrs := func() []string {
		var out []string
		for _, nd := range nodes {
			out = append(out, nd.http)
		}
		return out
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	newClient := func(tlsConf *tls.Config) *client.Client {
		c, err := client.New(addrs(), client.Options{Token: p.operatorToken, TLS: tlsConf, MaxAttempts: 4, MaxBackoff: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var cl atomic.Pointer[client.Client]
	cl.Store(newClient(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := cl.Load().CreateResource(ctx, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40, Unit: "cores"})
	cancel()
	if err != nil {
		t.Fatal(err)
	}

	// The writer books one core for a minute per reservation, retrying
	// each with its idempotency key until it is acknowledged.
	type ack struct {
		id string
		at time.Time
	}
	var (
		mu      sync.Mutex
		acks    []ack
		lastErr atomic.Value
	)
	acked := make(chan struct{}, 1)
	stopWriter := make(chan struct{})
	writerDone := make(chan struct{})
	from := time.Now()
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			key := fmt.Sprintf("mig-%d", i)
			for {
				select {
				case <-stopWriter:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := cl.Load().Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: key, Shape: &ledgerdv1.Shape{
					Parts:    []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}},
					Duration: durationpb.New(time.Minute), NotBefore: timestamppb.New(from), Deadline: timestamppb.New(from.Add(24 * time.Hour)),
				}})
				cancel()
				if err == nil && r.GetId() != "" {
					mu.Lock()
					acks = append(acks, ack{id: r.GetId(), at: time.Now()})
					mu.Unlock()
					select {
					case acked <- struct{}{}:
					default:
					}
					break
				}
				if err == nil {
					err = errors.New("no reservation id in the answer")
				}
				lastErr.Store(fmt.Sprintf("%s: %v", key, err))
				select { // back off before the retry
				case <-stopWriter:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}()
	ackCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	// waitWrites waits for n writes acknowledged from now on.
	waitWrites := func(n int, what string) {
		t.Helper()
		want := ackCount() + n
		deadline := time.NewTimer(20 * time.Second)
		defer deadline.Stop()
		for ackCount() < want {
			select {
			case <-acked:
			case <-deadline.C:
				t.Fatalf("%s: only %d of %d writes acknowledged within 20s (last error: %v)", what, ackCount()-want+n, n, lastErr.Load())
			}
		}
	}
	waitWrites(3, "before the first restart")

	// plainRaft sends Raft's own AppendEntries, in plaintext, with term
	// 0: a server that takes the connection answers with a refusal that
	// carries its term and changes nothing.
	plainRaft := func(nd *migNode) error {
		tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		var resp raft.AppendEntriesResponse
		err = tr.AppendEntries("intruder", raft.ServerAddress(nd.raft), &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(tr.LocalAddr())},
		}, &resp)
		if err == nil && resp.Term == 0 {
			err = errors.New("answer without a term")
		}
		return err
	}
	// internalStatus calls GET /internal/status without the cluster token.
	internalStatus := func(nd *migNode, scheme string, conf *tls.Config) (int, string, error) {
		tr := &http.Transport{TLSClientConfig: conf}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(scheme + "://" + nd.http + "/internal/status")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	clientCert, clientKey := p.issue(t, false, "broker")
	brokerPair, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}

	for stage := 1; stage <= 3; stage++ {
		for _, nd := range nodes {
			t0 := time.Now()
			nd.stop()
			if err := startNode(nd, stage, nodes); err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s restarted into stage %d", nd.name, stage)
			waitCluster(what + ": a leader and three live voters")
			waitWrites(3, what)
			t.Logf("%s: leader and writes again after %s", what, time.Since(t0).Round(time.Millisecond))
		}
		switch stage {
		case 1:
			// Every server takes TLS now: clients move to https. Plain
			// Raft peers and plain internal callers without the token
			// are still taken (stage-0 servers had no key); TLS callers
			// must be servers.
			cl.Store(newClient(&tls.Config{RootCAs: pool}))
			waitWrites(3, "clients over https")
			if err := plainRaft(nodes[0]); err != nil {
				t.Errorf("stage 1: a plaintext Raft peer is refused: %v", err)
			}
			for _, c := range []struct {
				name, scheme string
				conf         *tls.Config
				want         int
			}{
				{"plaintext caller", "http", nil, http.StatusOK},
				{"TLS caller without a certificate", "https", &tls.Config{RootCAs: pool}, http.StatusUnauthorized},
				{"TLS caller with a client certificate", "https", &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{brokerPair}}, http.StatusForbidden},
			} {
				if code, body, err := internalStatus(nodes[0], c.scheme, c.conf); err != nil || code != c.want {
					t.Errorf("stage 1, /internal/status, %s: %d %q (err %v), want %d", c.name, code, body, err, c.want)
				}
			}
		case 2:
			// Every server has the gossip key: a plaintext internal
			// caller needs the cluster token again.
			if code, body, err := internalStatus(nodes[0], "http", nil); err != nil || code != http.StatusForbidden || !strings.Contains(body, "cluster token") {
				t.Errorf("stage 2, plaintext /internal/status without the token: %d %q (err %v), want 403 naming the cluster token", code, body, err)
			}
		}
	}
	close(stopWriter)
	<-writerDone

	// Secure now: plaintext is refused on the Raft port and on /internal/.
	for _, nd := range nodes {
		if err := plainRaft(nd); err == nil {
			t.Errorf("%s: a plaintext Raft AppendEntries was answered after the move", nd.name)
		}
		code, body, err := internalStatus(nd, "http", nil)
		if err == nil && code == http.StatusOK {
			t.Errorf("%s: plaintext GET /internal/status answered %d %q after the move", nd.name, code, body)
		}
		if nd.agent.cfg.Insecure || nd.agent.cfg.SecureMigration != "" {
			t.Errorf("%s: still insecure after stage 3", nd.name)
		}
	}

	// Every acknowledged write is on every server.
	mu.Lock()
	all := slices.Clone(acks)
	mu.Unlock()
	for _, nd := range nodes {
		f := nd.agent.FSM()
		testwait.Until(t, 10*time.Second, nd.name+" to hold every acknowledged write", func() bool {
			for _, a := range all {
				if _, ok := f.Get(a.id); !ok {
					return false
				}
			}
			return true
		})
	}
	var gap time.Duration
	for i := 1; i < len(all); i++ {
		gap = max(gap, all[i].at.Sub(all[i-1].at))
	}
	t.Logf("%d writes acknowledged through nine restarts, all on every server; longest gap between two acknowledgements %s; test took %s",
		len(all), gap.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}
