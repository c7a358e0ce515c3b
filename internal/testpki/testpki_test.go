package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

func TestLeavesVerifyOnlyAgainstTheirCAForTheirUsesAndHosts(t *testing.T) {
	ca, other := NewCA(t, "servers"), NewCA(t, "stranger")
	both := ca.Issue(t, "peer", Options{})
	server := ca.Issue(t, "server", Options{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, Hosts: []string{"localhost", "127.0.0.11"}})
	client := ca.Issue(t, "broker", Options{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	strange := other.Issue(t, "intruder", Options{})
	for _, tc := range []struct {
		name  string
		leaf  *Leaf
		roots *x509.CertPool
		usage x509.ExtKeyUsage
		host  string // "" = not checked
		ok    bool
	}{
		{"default as server on 127.0.0.1", both, ca.Pool, x509.ExtKeyUsageServerAuth, "127.0.0.1", true},
		{"default as client", both, ca.Pool, x509.ExtKeyUsageClientAuth, "", true},
		{"default not for another host", both, ca.Pool, x509.ExtKeyUsageServerAuth, "127.0.0.2", false},
		{"server-only as server, DNS name", server, ca.Pool, x509.ExtKeyUsageServerAuth, "localhost", true},
		{"server-only as server, IP", server, ca.Pool, x509.ExtKeyUsageServerAuth, "127.0.0.11", true},
		{"server-only not on the default host", server, ca.Pool, x509.ExtKeyUsageServerAuth, "127.0.0.1", false},
		{"server-only not as client", server, ca.Pool, x509.ExtKeyUsageClientAuth, "", false},
		{"client-only as client", client, ca.Pool, x509.ExtKeyUsageClientAuth, "", true},
		{"client-only not as server", client, ca.Pool, x509.ExtKeyUsageServerAuth, "", false},
		{"other CA's leaf", strange, ca.Pool, x509.ExtKeyUsageClientAuth, "", false},
		{"leaf under its own CA only", both, other.Pool, x509.ExtKeyUsageClientAuth, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.leaf.TLS.Leaf.Verify(x509.VerifyOptions{Roots: tc.roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}, DNSName: tc.host})
			if (err == nil) != tc.ok {
				t.Fatalf("verify: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestFilesRoundTrip: what is written loads back as the same CA and key
// pair, the way the agent and rpc.ServerTLS read them.
func TestFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ca := NewCA(t, "servers")
	leaf := ca.Issue(t, "server", Options{})
	caFile := ca.WriteFile(t, dir)
	certFile, keyFile := leaf.WriteFiles(t, dir)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !pair.Leaf.Equal(leaf.TLS.Leaf) {
		t.Fatal("certificate file does not hold the issued certificate")
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s is not PEM", caFile)
	}
	got, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !got.Equal(ca.Cert) || !got.IsCA {
		t.Fatalf("CA file holds %v (err %v), want the CA certificate", got.Subject, err)
	}
}
