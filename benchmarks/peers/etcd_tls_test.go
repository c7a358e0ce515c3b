package peers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ledgerd/ledgerd/agent/pki"
	"github.com/ledgerd/ledgerd/benchmarks/service"
)

// TestEtcdTLS: with EtcdTLS a member serves its clients over mutual TLS —
// the benchmark's own client books, a client that trusts the CA but has no
// certificate is refused — as a secured ledgerd does.
func TestEtcdTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member")
	}
	dir := t.TempDir()
	ca, err := pki.NewCA("etcd bench CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue(pki.Request{Server: true, Name: "etcd", Now: time.Now(), ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sec := &EtcdTLS{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "etcd.pem"), Key: filepath.Join(dir, "etcd-key.pem")}
	for path, b := range map[string][]byte{sec.CA: ca.CertPEM, sec.Cert: cert, sec.Key: key} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e, err := NewEtcd(1, 23720, filepath.Join(dir, "data"), sec)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Setup(ctx, []string{"r"}, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reserve(ctx, service.Shape{Resource: "r", Amount: 4, Duration: 10, NotBefore: 0, Deadline: 10}); err != nil {
		t.Fatalf("reserve over TLS: %v", err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	anon, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:23720"}, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	defer acancel()
	if _, err := anon.Get(actx, etcdPrefix); err == nil {
		t.Fatal("a client without a certificate read from a member that requires one")
	}
}
