package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testpki"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestAgentServesTLS: with tls_http the API port speaks only TLS, HTTP/2
// via ALPN and HTTP/1.1; with tls_verify_incoming a client without a
// certificate signed by an accepted CA is refused.
func TestAgentServesTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "servers")
	brokers := testpki.NewCA(t, "brokers")
	stranger := testpki.NewCA(t, "stranger")
	certFile, keyFile := ca.Issue(t, "server", testpki.Options{}).WriteFiles(t, dir)
	brokerCert := brokers.Issue(t, "broker", testpki.Options{}).TLS
	peerCert := ca.Issue(t, "peer", testpki.Options{}).TLS
	strangerCert := stranger.Issue(t, "stranger", testpki.Options{}).TLS
	tlsArgs := []string{"-tls-http", "true", "-tls-cert-file", certFile, "-tls-key-file", keyFile, "-tls-ca-file", ca.WriteFile(t, dir)}

	type probe struct {
		name  string
		url   string // "http" or "https"
		conf  *tls.Config
		h2    bool
		ok    bool
		proto int // wanted major protocol version when ok
	}
	run := func(t *testing.T, s *Agent, probes []probe) {
		addr := s.Addr()
		for _, p := range probes {
			t.Run(p.name, func(t *testing.T) {
				tr := &http.Transport{TLSClientConfig: p.conf.Clone(), ForceAttemptHTTP2: p.h2}
				if !p.h2 {
					tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
				}
				defer tr.CloseIdleConnections()
				resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(p.url + "://" + addr + "/healthz")
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					defer resp.Body.Close()
				}
				if ok != p.ok {
					t.Fatalf("ok=%v (err %v), want %v", ok, err, p.ok)
				}
				if ok && resp.ProtoMajor != p.proto {
					t.Fatalf("served %s, want HTTP/%d", resp.Proto, p.proto)
				}
			})
		}
	}
	trust := &tls.Config{RootCAs: ca.Pool}
	with := func(c tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{c}}
	}

	t.Run("server TLS", func(t *testing.T) {
		s, out := startAgent(t, tlsArgs...)
		if !strings.Contains(out.String(), "https://") {
			t.Errorf("banner does not show an https address:\n%s", out.String())
		}
		run(t, s, []probe{
			{name: "https HTTP/2", url: "https", conf: trust, h2: true, ok: true, proto: 2},
			{name: "https HTTP/1.1", url: "https", conf: trust, ok: true, proto: 1},
			{name: "plain http", url: "http", ok: false},
			{name: "untrusted server certificate", url: "https", conf: &tls.Config{RootCAs: stranger.Pool}, ok: false},
		})
		c, err := client.New([]string{s.Addr()}, client.Options{TLS: trust, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Resources(context.Background())
		if err != nil || len(res) != 3 {
			t.Fatalf("Resources over TLS: %d resources, err %v", len(res), err)
		}
	})
	t.Run("mutual TLS", func(t *testing.T) {
		s, _ := startAgent(t, append(tlsArgs, "-tls-verify-incoming", "true", "-tls-http-client-ca-file", brokers.WriteFile(t, dir))...)
		run(t, s, []probe{
			{name: "broker certificate", url: "https", conf: with(brokerCert), h2: true, ok: true, proto: 2},
			{name: "server CA certificate", url: "https", conf: with(peerCert), ok: true, proto: 1},
			{name: "no client certificate", url: "https", conf: trust, h2: true, ok: false},
			{name: "certificate from another CA", url: "https", conf: with(strangerCert), ok: false},
			{name: "plain http", url: "http", ok: false},
		})
	})
}

func TestAgentTLSConfigCheck(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "servers")
	caFile := ca.WriteFile(t, dir)
	certFile, keyFile := ca.Issue(t, "server", testpki.Options{}).WriteFiles(t, dir)
	missing := filepath.Join(dir, "missing.pem")
	base := []string{"-dev", "-config-check", "-tls-cert-file", certFile, "-tls-key-file", keyFile, "-tls-ca-file", caFile}
	for _, tc := range []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"tls_http", append(base, "-tls-http", "true"), ""},
		{"mutual TLS with client CA", append(base, "-tls-http", "true", "-tls-verify-incoming", "true", "-tls-http-client-ca-file", caFile), ""},
		{"tls_http without certificate", []string{"-dev", "-tls-http", "true"}, "tls_http: needs tls_cert_file"},
		{"client CA without tls_http", append(base, "-tls-verify-incoming", "true", "-tls-http-client-ca-file", caFile), "tls_http_client_ca_file: only used with"},
		{"missing client CA file", append(base, "-tls-http", "true", "-tls-verify-incoming", "true", "-tls-http-client-ca-file", missing), "tls_http_client_ca_file: stat " + missing},
		{"missing certificate file", []string{"-dev", "-tls-http", "true", "-tls-cert-file", missing, "-tls-key-file", keyFile, "-tls-ca-file", caFile}, "tls_cert_file: stat " + missing},
		{"not a PEM CA", append(base[:len(base)-1], keyFile, "-tls-http", "true"), "tls_ca_file: no PEM certificates"},
		{"bad tls_http value", []string{"-dev", "-tls-http", "maybe"}, "tls-http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseArgs(tc.args, func(string) string { return "" }, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid config rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestThreeAgentsForwardOverTLS runs three in-process agents with mutual
// TLS on Raft and on the API port: a write submitted on a follower is
// forwarded to the leader over https and lands on every server.
func TestThreeAgentsForwardOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "servers")
	caFile := ca.WriteFile(t, dir)
	type addrs struct{ http, raft, gossip string }
	var nodes []addrs
	var servers []*Agent
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
		servers, stops = nil, nil
	}
	t.Cleanup(stopAll)
	// Ports are reserved (see testnet), but an unrelated program may still
	// have bound one: then all three start over on fresh ports.
	testnet.Start(t, 9, func(a []string) error {
		nodes = []addrs{{a[0], a[1], a[2]}, {a[3], a[4], a[5]}, {a[6], a[7], a[8]}}
		data := t.TempDir()
		for i, a := range nodes {
			name := "s" + strconv.Itoa(i)
			certFile, keyFile := ca.Issue(t, name, testpki.Options{}).WriteFiles(t, dir)
			args := []string{
				"-node-name", name, "-data-dir", filepath.Join(data, name), "-log-level", "error",
				"-http-addr", a.http, "-raft-addr", a.raft, "-gossip-addr", a.gossip, "-bootstrap-expect", "3",
				"-tls-http", "true", "-tls-verify-incoming", "true",
				"-tls-cert-file", certFile, "-tls-key-file", keyFile, "-tls-ca-file", caFile,
				"-gossip-key", "MDEyMzQ1Njc4OWFiY2RlZg==",
			}
			for j, o := range nodes {
				if j != i {
					args = append(args, "-retry-join", o.gossip)
				}
			}
			cfg, opts, err := ParseArgs(args, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(cfg, Options{Dev: opts.Dev, Logger: cfg.NewLogger(io.Discard)})
			if err != nil {
				stopAll()
				return fmt.Errorf("%s: %w", name, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx, io.Discard) }()
			stops = append(stops, func() {
				cancel()
				<-done
			})
			servers = append(servers, s)
		}
		return nil
	})
	var follower *Agent
	deadline := time.Now().Add(30 * time.Second)
	for follower == nil {
		for _, s := range servers {
			if id, _ := s.Node().Leader(); s.Node().Ready() && id != "" && !s.Node().IsLeader() {
				follower = s
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no follower with a known leader within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := follower.applyDev(ctx, createResource("tls-cpu", 32)); err != nil {
		t.Fatalf("write forwarded from a follower: %v", err)
	}
	waitAll := time.Now().Add(10 * time.Second)
	for _, s := range servers {
		for {
			if r, ok := s.FSM().Resource("tls-cpu"); ok && r.GetCapacity() == 32 {
				break
			}
			if time.Now().After(waitAll) {
				t.Fatalf("server %s lacks the forwarded write", s.cfg.NodeName)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The internal endpoint refuses a caller without a certificate.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}
	defer tr.CloseIdleConnections()
	if resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + nodes[0].http + "/internal/status"); err == nil {
		resp.Body.Close()
		t.Fatalf("status answered %s to a caller without a certificate", resp.Status)
	}
}
