// Package testpki issues throwaway X.509 certificates for tests: a
// certificate authority made for one test and the leaf certificates it
// signs, as crypto values, PEM bytes and files. Keys are ECDSA P-256 (leaf
// keys PEM-encoded as PKCS #8); every certificate is valid from an hour
// before it was made until an hour after.
//
// It is test support only: product code must not import it, and nothing
// it makes may be trusted outside the test that made it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a throwaway certificate authority.
type CA struct {
	Name string
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	Pool *x509.CertPool // holds Cert only: trust this CA and nothing else
	PEM  []byte         // Cert, PEM-encoded
}

// Leaf is a certificate signed by a CA, with its key.
type Leaf struct {
	Name    string
	TLS     tls.Certificate // for tls.Config.Certificates
	CertPEM []byte
	KeyPEM  []byte // PKCS #8
}

// Options shape a leaf certificate; the zero value is a certificate for
// 127.0.0.1 usable by servers and by clients.
type Options struct {
	// Usage is the extended key usage; empty means server and client auth.
	Usage []x509.ExtKeyUsage
	// Hosts are the IP addresses and DNS names the certificate is valid
	// for; empty means 127.0.0.1.
	Hosts []string
}

// NewCA makes a CA whose certificate has common name name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, name)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testpki: CA %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: CA %s: %v", name, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Name: name, Cert: cert, Key: key, Pool: pool, PEM: pemBlock("CERTIFICATE", der)}
}

// Issue signs a leaf certificate with common name name.
func (ca *CA) Issue(t testing.TB, name string, o Options) *Leaf {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, name)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, o.Usage
	if len(tmpl.ExtKeyUsage) == 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	hosts := o.Hosts
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatalf("testpki: issue %s: %v", name, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: issue %s: %v", name, err)
	}
	l := &Leaf{Name: name, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}
	if l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		t.Fatalf("testpki: issue %s: %v", name, err)
	}
	return l
}

// WriteFile writes the CA certificate to dir/<name>-ca.pem and returns the
// path.
func (ca *CA) WriteFile(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, ca.Name+"-ca.pem")
	writeFile(t, path, ca.PEM)
	return path
}

// WriteFiles writes the certificate to dir/<name>.pem and its key to
// dir/<name>-key.pem and returns both paths.
func (l *Leaf) WriteFiles(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, l.Name+".pem"), filepath.Join(dir, l.Name+"-key.pem")
	writeFile(t, certFile, l.CertPEM)
	writeFile(t, keyFile, l.KeyPEM)
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	return key
}

// template is what every certificate shares: a random serial (so that
// certificates of different CAs never look alike to a verifier), the
// common name and the validity window.
func template(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatalf("testpki: serial: %v", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("testpki: %v", err)
	}
}
