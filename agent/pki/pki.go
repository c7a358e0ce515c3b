// Package pki makes and checks the X.509 material of a ledgerd cluster: a
// cluster CA, server certificates that carry the server role, and client
// certificates that do not. `ledgerd tls ca create` and `ledgerd tls cert
// create` use it to make files; the agent uses IsServer to tell a server
// from a client that holds a certificate of the same CA, on Raft and on
// the internal endpoints.
//
// The role is the DNS name ServerName in the certificate's subject
// alternative names together with the server-auth extended key usage:
// client certificates issued here have neither, so a client certificate
// of the cluster's CA is never accepted where a server is required.
//
// What it must not do: read or write files other than those it is asked
// to, or weaken verification (it adds checks to what crypto/tls verifies,
// it never replaces them).
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"time"
)

// ServerName is the DNS subject alternative name every server certificate
// carries; with the server-auth key usage it marks the server role. Peers
// verify servers' certificates against this name (tls.Config.ServerName).
const ServerName = "server.ledgerd"

// CA is a certificate authority that signs a cluster's certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM and KeyPEM are Cert and Key PEM-encoded (the key as PKCS #8).
	CertPEM, KeyPEM []byte
}

// NewCA makes a CA with common name name, valid from now for validFor.
func NewCA(name string, now time.Time, validFor time.Duration) (*CA, error) {
	if name == "" {
		return nil, errors.New("pki: CA name is empty")
	}
	if validFor <= 0 {
		return nil, fmt.Errorf("pki: CA validity %s must be positive", validFor)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	tmpl, err := template(name, now, validFor)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	return newCA(der, key)
}

func newCA(der []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kb)}, nil
}

// LoadCA reads a CA certificate and its key (PKCS #8 or SEC 1 ECDSA) from
// PEM files.
func LoadCA(certFile, keyFile string) (*CA, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	cblock, _ := pem.Decode(cb)
	if cblock == nil || cblock.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("pki: %s holds no PEM certificate", certFile)
	}
	kblock, _ := pem.Decode(kb)
	if kblock == nil {
		return nil, fmt.Errorf("pki: %s holds no PEM key", keyFile)
	}
	var key *ecdsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(kblock.Bytes); err == nil {
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("pki: %s: want an ECDSA key, got %T", keyFile, k)
		}
		key = ek
	} else if ek, err2 := x509.ParseECPrivateKey(kblock.Bytes); err2 == nil {
		key = ek
	} else {
		return nil, fmt.Errorf("pki: %s: %w", keyFile, err)
	}
	ca, err := newCA(cblock.Bytes, key)
	if err != nil {
		return nil, err
	}
	if !ca.Cert.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", certFile)
	}
	if !key.PublicKey.Equal(ca.Cert.PublicKey) {
		return nil, fmt.Errorf("pki: %s is not the key of %s", keyFile, certFile)
	}
	return ca, nil
}

// Request describes a certificate to issue.
type Request struct {
	// Server issues a server certificate (ServerName, server and client
	// auth); otherwise a client certificate (client auth only).
	Server bool
	// Name is the common name: the node name of a server, the identity
	// of a client (the tokens file maps client common names to tenants).
	Name string
	// IPs and DNSNames are further subject alternative names, the
	// addresses peers and clients dial a server at.
	IPs      []net.IP
	DNSNames []string
	// Now and ValidFor set the validity.
	Now      time.Time
	ValidFor time.Duration
}

// Issue signs a certificate for r and returns it and its new key, PEM.
func (ca *CA) Issue(r Request) (certPEM, keyPEM []byte, err error) {
	if r.Name == "" {
		return nil, nil, errors.New("pki: certificate name is empty")
	}
	if r.ValidFor <= 0 {
		return nil, nil, fmt.Errorf("pki: certificate validity %s must be positive", r.ValidFor)
	}
	if !r.Server && (len(r.IPs) > 0 || len(r.DNSNames) > 0) {
		return nil, nil, errors.New("pki: client certificates carry no addresses")
	}
	if slices.Contains(r.DNSNames, ServerName) {
		return nil, nil, fmt.Errorf("pki: %s is the server role's name; it is added to server certificates by itself", ServerName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: key: %w", err)
	}
	tmpl, err := template(r.Name, r.Now, r.ValidFor)
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if r.Server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.DNSNames = append([]string{ServerName, "localhost"}, r.DNSNames...)
		tmpl.IPAddresses = append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, r.IPs...)
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if ca.Cert.NotAfter.Before(tmpl.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: certificate %s: %w", r.Name, err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: key: %w", err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", kb), nil
}

// IsServer reports whether cert carries the server role: ServerName among
// its DNS names and the server-auth extended key usage.
func IsServer(cert *x509.Certificate) bool {
	return cert != nil && slices.Contains(cert.DNSNames, ServerName) && slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
}

// ErrNotServer is returned by VerifyServerPeer for a verified peer whose
// certificate lacks the server role.
var ErrNotServer = errors.New("peer certificate lacks the ledgerd server role")

// VerifyServerPeer is a tls.Config.VerifyConnection check for connections
// between servers: the peer must have presented a certificate (that
// crypto/tls verified against the cluster CA) with the server role. Use it
// where a client certificate of the same CA must not pass for a server.
func VerifyServerPeer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("peer presented no certificate; servers must")
	}
	if !IsServer(cs.PeerCertificates[0]) {
		return fmt.Errorf("%w (common name %q)", ErrNotServer, cs.PeerCertificates[0].Subject.CommonName)
	}
	return nil
}

func template(name string, now time.Time, validFor time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial: %w", err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"ledgerd"}},
		NotBefore:    now.Add(-time.Minute), // tolerate small clock skew between hosts
		NotAfter:     now.Add(validFor),
	}, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// WriteNew writes data to path with mode perm, refusing to overwrite an
// existing file (a CA key overwritten by mistake cannot be got back).
func WriteNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}
