package cluster

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	dto "github.com/prometheus/client_model/go"

	"github.com/ledgerd/ledgerd/internal/testpki"
)

// serverTLS returns a mutual-TLS config for one server with a certificate
// signed by ca: it serves and dials with that certificate and trusts only ca.
func serverTLS(t *testing.T, ca *testpki.CA, name string) *tls.Config {
	t.Helper()
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{ca.Issue(t, name, testpki.Options{}).TLS},
		RootCAs:      ca.Pool,
		ClientCAs:    ca.Pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

func TestMutualTLSRaftCluster(t *testing.T) {
	ca := testpki.NewCA(t, "ledgerd test CA")
	c := newCluster(t, 3, func(cfg *Config) { cfg.RaftTLS = serverTLS(t, ca, cfg.NodeName) })
	c.waitVoters(3)
	var want []string
	for i := range 5 {
		apply(t, c.nodes[i%3], fmt.Sprintf("k%d|v%d", i, i))
		want = append(want, fmt.Sprintf("v%d", i))
	}
	for _, tn := range c.running() {
		if got := readEntries(t, tn); !slices.Equal(got, want) {
			t.Fatalf("%s entries %q", tn.name, got)
		}
	}
}

func TestRaftStreamLayerRefusesUntrustedPeers(t *testing.T) {
	ca, other := testpki.NewCA(t, "ledgerd test CA"), testpki.NewCA(t, "ledgerd test CA")
	ln, err := newStreamLayer("127.0.0.1:0", "", serverTLS(t, ca, "server"), MigrationOff)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	for _, tc := range []struct {
		name string
		conf *tls.Config
		ok   bool
	}{
		{"same CA", serverTLS(t, ca, "peer"), true},
		{"other CA", serverTLS(t, other, "intruder"), false},
		{"no client certificate", &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.Pool}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &streamLayer{tls: tc.conf, dialTLS: true}
			conn, err := d.Dial(raft.ServerAddress(ln.Addr().String()), 2*time.Second)
			if err == nil {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
				if _, err = conn.Write([]byte("ping")); err == nil {
					buf := make([]byte, 4)
					_, err = io.ReadFull(conn, buf)
				}
			}
			if tc.ok && err != nil {
				t.Fatalf("trusted peer refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("untrusted peer got through")
			}
		})
	}
}

func TestInternalEndpointsNeedTheClusterToken(t *testing.T) {
	c := &tcluster{t: t}
	tn := c.add(0, func(cfg *Config) { cfg.Dev, cfg.GossipKey = true, []byte("0123456789abcdef") })
	c.start(tn)
	t.Cleanup(c.stopAll)
	c.leader()
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusForbidden},
		{"wrong token", internalToken([]byte("fedcba9876543210")), http.StatusForbidden},
		{"cluster token", internalToken([]byte("0123456789abcdef")), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+tn.rpcAddr+pathApply, strings.NewReader("x|y"))
			if tc.token != "" {
				req.Header.Set(tokenHeader, tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if got := tn.fsm.entries(); !slices.Equal(got, []string{"y"}) {
		t.Fatalf("entries %q: only the authorised write may land", got)
	}
}

// TestForwardingOverTLS runs the internal endpoints over mutual TLS: writes
// sent to followers reach the leader over https, and a plain-http or
// certificate-less caller is refused.
func TestForwardingOverTLS(t *testing.T) {
	ca := testpki.NewCA(t, "ledgerd test CA")
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.RaftTLS = serverTLS(t, ca, cfg.NodeName)
		cfg.RPCTLS = serverTLS(t, ca, cfg.NodeName)
	})
	c.waitVoters(3)
	f := c.follower()
	var want []string
	for i := range 4 {
		tn := f
		if i%2 == 1 {
			tn = c.leader()
		}
		apply(t, tn, fmt.Sprintf("k%d|v%d", i, i))
		want = append(want, fmt.Sprintf("v%d", i))
	}
	if got := readEntries(t, f); !slices.Equal(got, want) {
		t.Fatalf("follower %s entries %q, want %q", f.name, got, want)
	}
	var m dto.Metric
	if err := f.node.m.forwarded.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n < 2 {
		t.Fatalf("follower forwarded %v writes, want >= 2", n)
	}
	statusURL := "://" + c.leader().rpcAddr + pathStatus
	for _, tc := range []struct {
		name   string
		scheme string
		conf   *tls.Config
		ok     bool
	}{
		{"peer certificate", "https", serverTLS(t, ca, "peer"), true},
		{"no client certificate", "https", &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.Pool}, false},
		{"other CA", "https", serverTLS(t, testpki.NewCA(t, "ledgerd test CA"), "intruder"), false},
		{"plain http", "http", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &http.Client{Timeout: 3 * time.Second, Transport: peerTransport(tc.conf)}
			defer cl.CloseIdleConnections()
			resp, err := cl.Get(tc.scheme + statusURL)
			ok := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				resp.Body.Close()
			}
			if ok != tc.ok {
				t.Fatalf("got ok=%v (err %v), want %v", ok, err, tc.ok)
			}
		})
	}
}
