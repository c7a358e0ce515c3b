package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueRoles(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ca, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvPEM, _, err := ca.Issue(Request{Server: true, Name: "head-1", IPs: []net.IP{net.ParseIP("10.0.0.1")}, DNSNames: []string{"head-1.example"}, Now: now, ValidFor: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := parse(t, srvPEM)
	if !IsServer(srv) {
		t.Errorf("server certificate lacks the server role: DNS %v, EKU %v", srv.DNSNames, srv.ExtKeyUsage)
	}
	if !srv.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("server certificate outlives its CA: %s > %s", srv.NotAfter, ca.Cert.NotAfter)
	}
	if err := srv.VerifyHostname("10.0.0.1"); err != nil {
		t.Errorf("server certificate not valid for its IP: %v", err)
	}
	if err := srv.VerifyHostname(ServerName); err != nil {
		t.Errorf("server certificate not valid for %s: %v", ServerName, err)
	}
	cliPEM, _, err := ca.Issue(Request{Name: "broker-1", Now: now, ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if cli := parse(t, cliPEM); IsServer(cli) || len(cli.DNSNames) > 0 || len(cli.IPAddresses) > 0 {
		t.Errorf("client certificate passes for a server: DNS %v, IPs %v, EKU %v", cli.DNSNames, cli.IPAddresses, cli.ExtKeyUsage)
	}
	for _, bad := range []struct {
		name string
		r    Request
		want string
	}{
		{"no name", Request{Server: true, Now: now, ValidFor: time.Hour}, "name is empty"},
		{"no validity", Request{Server: true, Name: "x", Now: now}, "validity"},
		{"client with address", Request{Name: "x", IPs: []net.IP{net.IPv4(1, 2, 3, 4)}, Now: now, ValidFor: time.Hour}, "no addresses"},
		{"role name by hand", Request{Server: true, Name: "x", DNSNames: []string{ServerName}, Now: now, ValidFor: time.Hour}, "server role"},
	} {
		if _, _, err := ca.Issue(bad.r); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want one saying %q", bad.name, err, bad.want)
		}
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := NewCA("c", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewCA("other", now, time.Hour)
	certFile, keyFile, otherKey := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"), filepath.Join(dir, "other-key.pem")
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, ca.CertPEM}, {keyFile, ca.KeyPEM}, {otherKey, other.KeyPEM}} {
		if err := WriteNew(f.path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteNew(keyFile, ca.KeyPEM, 0o600); err == nil {
		t.Error("WriteNew overwrote an existing key file")
	}
	got, err := LoadCA(certFile, keyFile)
	if err != nil || !got.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA = %v, %v", got, err)
	}
	if _, err := LoadCA(certFile, otherKey); err == nil || !strings.Contains(err.Error(), "not the key") {
		t.Errorf("LoadCA with another CA's key: %v", err)
	}
	if _, err := LoadCA(keyFile, keyFile); err == nil {
		t.Error("LoadCA took a key file for a certificate")
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestVerifyServerPeer runs real TLS handshakes against a listener that
// requires a server of the cluster: a server certificate passes, a client
// certificate of the same CA and a server certificate of another CA do not.
func TestVerifyServerPeer(t *testing.T) {
	now := time.Now()
	ca, _ := NewCA("cluster", now, time.Hour)
	stranger, _ := NewCA("stranger", now, time.Hour)
	pair := func(ca *CA, r Request) tls.Certificate {
		r.Now, r.ValidFor = now, time.Hour
		c, k, err := ca.Issue(r)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	listenerCert := pair(ca, Request{Server: true, Name: "s0"})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{listenerCert},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, VerifyConnection: VerifyServerPeer,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	for _, c := range []struct {
		name string
		cert tls.Certificate
		ok   bool
	}{
		{"server of the cluster", pair(ca, Request{Server: true, Name: "s1"}), true},
		{"client of the same CA", pair(ca, Request{Name: "broker"}), false},
		{"server of another CA", pair(stranger, Request{Server: true, Name: "s9"}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
				RootCAs: pool, ServerName: ServerName, Certificates: []tls.Certificate{c.cert}, MinVersion: tls.VersionTLS13,
			})
			ok := err == nil
			if ok {
				// TLS 1.3 reports a refused client certificate on the first read.
				buf := make([]byte, 2)
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = conn.Read(buf)
				ok = err == nil && string(buf) == "ok"
				conn.Close()
			}
			if ok != c.ok {
				t.Fatalf("accepted = %v (err %v), want %v", ok, err, c.ok)
			}
		})
	}
	if err := VerifyServerPeer(tls.ConnectionState{}); err == nil {
		t.Error("a peer without a certificate passed")
	}
	cli := pair(ca, Request{Name: "broker"})
	leaf, _ := x509.ParseCertificate(cli.Certificate[0])
	if err := VerifyServerPeer(tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}); !errors.Is(err, ErrNotServer) {
		t.Errorf("client certificate: err = %v, want ErrNotServer", err)
	}
}
