package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
	"github.com/ledgerd/ledgerd/internal/testnet"
	"github.com/ledgerd/ledgerd/internal/testpki"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestAgentServesTLS: with tls_http the API port speaks only TLS, HTTP/2
// via ALPN and HTTP/1.1; with tls_http_require_client_cert a client
// without a certificate signed by an accepted CA is refused.
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
		s, _ := startAgent(t, append(tlsArgs, "-tls-http-require-client-cert", "true", "-tls-http-client-ca-file", brokers.WriteFile(t, dir))...)
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
		{"client certificates without tls_http", append(base, "-tls-http-require-client-cert", "true"), "tls_http_require_client_cert: only used with"},
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
	p := newTestPKI(t)
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
			args := append([]string{
				"-node-name", name, "-data-dir", filepath.Join(data, name), "-log-level", "error",
				"-http-addr", a.http, "-raft-addr", a.raft, "-gossip-addr", a.gossip, "-bootstrap-expect", "3",
			}, p.serverArgs(t, name)...)
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
	testwait.Until(t, 30*time.Second, "a follower with a known leader", func() bool {
		for _, s := range servers {
			if id, _ := s.Node().Leader(); s.Node().Ready() && id != "" && !s.Node().IsLeader() {
				follower = s
			}
		}
		return follower != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := follower.applyDev(ctx, createResource("tls-cpu", 32)); err != nil {
		t.Fatalf("write forwarded from a follower: %v", err)
	}
	for _, s := range servers {
		// Each apply closes the FSM's notify channel: wait on it, not on time.
		deadline := time.After(10 * time.Second)
		for {
			changed := s.FSM().Notify()
			if r, ok := s.FSM().Resource("tls-cpu"); ok && r.GetCapacity() == 32 {
				break
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("server %s lacks the forwarded write after 10s", s.cfg.NodeName)
			}
		}
	}
	// The internal endpoints refuse a caller without a certificate and one
	// holding a client certificate of the cluster's own CA; a server's
	// certificate gets through to the cluster's own check of its token.
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	clientCert, clientKey := p.issue(t, false, "broker")
	serverCert, serverKey := p.issue(t, true, "s9")
	for _, c := range []struct {
		name       string
		cert, key  string
		wantStatus int
		wantBody   string
	}{
		{"no certificate", "", "", http.StatusUnauthorized, "need a server certificate"},
		{"client certificate of the cluster CA", clientCert, clientKey, http.StatusForbidden, "lacks the ledgerd server role"},
		{"server certificate", serverCert, serverKey, http.StatusForbidden, "cluster token"},
	} {
		conf := &tls.Config{RootCAs: pool}
		if c.cert != "" {
			kp, err := tls.LoadX509KeyPair(c.cert, c.key)
			if err != nil {
				t.Fatal(err)
			}
			conf.Certificates = []tls.Certificate{kp}
		}
		tr := &http.Transport{TLSClientConfig: conf}
		for _, path := range []string{"/internal/status", "/internal/readindex"} {
			resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + nodes[0].http + path)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.wantStatus || !strings.Contains(string(body), c.wantBody) {
				t.Errorf("%s: GET %s = %s %q, want %d saying %q", c.name, path, resp.Status, body, c.wantStatus, c.wantBody)
			}
		}
		tr.CloseIdleConnections()
	}
	// The Raft port: a TLS peer must present a server certificate of the
	// cluster; a client certificate of the same CA is refused in the
	// handshake, before a byte of Raft's protocol is read.
	for _, c := range []struct {
		name      string
		cert, key string
		ok        bool
	}{
		{"no certificate", "", "", false},
		{"client certificate of the cluster CA", clientCert, clientKey, false},
		{"server certificate", serverCert, serverKey, true},
	} {
		conf := &tls.Config{RootCAs: pool, ServerName: pki.ServerName, MinVersion: tls.VersionTLS13}
		if c.cert != "" {
			kp, err := tls.LoadX509KeyPair(c.cert, c.key)
			if err != nil {
				t.Fatal(err)
			}
			conf.Certificates = []tls.Certificate{kp}
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", nodes[0].raft, conf)
		ok := err == nil
		if ok {
			// TLS 1.3 reports a refused client certificate as an alert on
			// the first read. An accepted peer reaches Raft, which closes
			// the connection on an unknown message type without an alert.
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = conn.Write([]byte{0xff})
			_, rerr := conn.Read(make([]byte, 1))
			ok = rerr != nil && !strings.Contains(rerr.Error(), "tls:") && !strings.Contains(rerr.Error(), "timeout")
			conn.Close()
		}
		if ok != c.ok {
			t.Errorf("raft port, %s: accepted = %v (dial err %v), want %v", c.name, ok, err, c.ok)
		}
	}

	// Certificate and token rotation without a restart, while a follower
	// keeps admitting writes: each server gets a new certificate in place
	// and reloads; afterwards every server presents its new certificate,
	// and a token added to the tokens file works on every server.
	stopWrites := make(chan struct{})
	writes := make(chan error, 1)
	acked := make(chan struct{}, 1024) // one per acknowledged write
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stopWrites:
				writes <- nil
				return
			default:
			}
			wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := follower.applyDev(wctx, createResource(fmt.Sprintf("rot-%d", n), 1))
			cancel()
			if err != nil {
				writes <- fmt.Errorf("write %d during the rotation: %w", n, err)
				return
			}
			select {
			case acked <- struct{}{}:
			default: // nobody is counting right now
			}
		}
	}()
	// waitWrites waits for n more acknowledged writes (or a failed one).
	waitWrites := func(n int) {
		t.Helper()
		for len(acked) > 0 { // only writes acknowledged from now on count
			<-acked
		}
		deadline := time.After(30 * time.Second)
		for got := 0; got < n; {
			select {
			case <-acked:
				got++
			case err := <-writes:
				t.Fatalf("writer stopped: %v", err)
			case <-deadline:
				t.Fatalf("only %d of %d writes within 30s", got, n)
			}
		}
	}
	waitWrites(3)
	newToken := "rotated-token-0042"
	write(t, p.tokensFile, []byte(`{"tokens":[{"token":"`+newToken+`","tenant":"ops","operator":true}]}`))
	serials := map[string]string{}
	for i, s := range servers {
		name := "s" + strconv.Itoa(i)
		certFile, _ := p.issue(t, true, name) // the same files the server was started with
		leaf := parsePEMFile(t, certFile)
		serials[s.Addr()] = leaf.SerialNumber.String()
		if err := s.Reload(); err != nil {
			t.Fatalf("reload %s: %v", name, err)
		}
		waitWrites(3) // the cluster keeps admitting with the new certificate
	}
	close(stopWrites)
	if err := <-writes; err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: pool, ServerName: pki.ServerName})
		if err != nil {
			t.Fatal(err)
		}
		got := conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
		conn.Close()
		if got != serials[s.Addr()] {
			t.Errorf("%s presents serial %s after the reload, want the new %s", s.Addr(), got, serials[s.Addr()])
		}
		newC, _ := client.New([]string{s.Addr()}, client.Options{Token: newToken, TLS: &tls.Config{RootCAs: pool}, MaxAttempts: 1})
		if _, err := newC.Resources(context.Background()); err != nil {
			t.Errorf("%s: the new token is refused after the reload: %v", s.Addr(), err)
		}
		oldC, _ := client.New([]string{s.Addr()}, client.Options{Token: p.operatorToken, TLS: &tls.Config{RootCAs: pool}, MaxAttempts: 1})
		if _, err := oldC.Resources(context.Background()); err == nil {
			t.Errorf("%s: the removed token still works after the reload", s.Addr())
		}
	}
}

func parsePEMFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
