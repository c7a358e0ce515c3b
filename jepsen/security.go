package jepsen

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
)

// Security is the material of one secured test cluster, made fresh for
// every run with the package `ledgerd tls` uses: a cluster CA, a server
// certificate per node (it carries the server role, so the nodes accept
// each other on Raft and on the internal endpoints), a client certificate
// for the harness's clients, a gossip key and a tokens file holding one
// operator token. Nothing in it outlives the run's directory.
type Security struct {
	// Dir holds every file below.
	Dir string
	// CAFile is the cluster CA's certificate (tls_ca_file).
	CAFile string
	// ClientCertFile and ClientKeyFile are the harness clients'
	// certificate, which lacks the server role.
	ClientCertFile, ClientKeyFile string
	// GossipKey is the base64 gossip encryption key (gossip_key).
	GossipKey string
	// TokensFile holds Token as the one operator (tokens_file).
	TokensFile string
	// Token is the operator's bearer token every client sends.
	Token string

	ca      *pki.CA
	servers map[string][2]string // node name -> certificate and key file
	client  tls.Certificate
	roots   *x509.CertPool
}

// NewSecurity makes the material of a cluster whose servers are named
// nodes into dir (created if missing). Certificates are valid for a day.
func NewSecurity(dir string, nodes []string) (*Security, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("security: %w", err)
	}
	now := time.Now()
	ca, err := pki.NewCA("jepsen cluster CA", now, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("security: %w", err)
	}
	s := &Security{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), ca: ca, servers: map[string][2]string{}}
	if err := writeSecret(s.CAFile, ca.CertPEM); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		cert, key, err := s.issue(pki.Request{Server: true, Name: n, Now: now, ValidFor: 24 * time.Hour}, "server-"+n)
		if err != nil {
			return nil, err
		}
		s.servers[n] = [2]string{cert, key}
	}
	if s.ClientCertFile, s.ClientKeyFile, err = s.issue(pki.Request{Name: "jepsen-client", Now: now, ValidFor: 24 * time.Hour}, "client"); err != nil {
		return nil, err
	}
	if s.client, err = tls.LoadX509KeyPair(s.ClientCertFile, s.ClientKeyFile); err != nil {
		return nil, fmt.Errorf("security: client certificate: %w", err)
	}
	s.roots = x509.NewCertPool()
	s.roots.AddCert(ca.Cert)
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("security: gossip key: %w", err)
	}
	s.GossipKey = base64.StdEncoding.EncodeToString(key[:])
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("security: token: %w", err)
	}
	s.Token = hex.EncodeToString(tok[:])
	tokens, err := json.Marshal(map[string]any{"tokens": []map[string]any{{"token": s.Token, "tenant": "jepsen", "operator": true}}})
	if err != nil {
		return nil, fmt.Errorf("security: tokens file: %w", err)
	}
	s.TokensFile = filepath.Join(dir, "tokens.json")
	if err := writeSecret(s.TokensFile, tokens); err != nil {
		return nil, err
	}
	return s, nil
}

// issue writes a certificate signed by the cluster CA and its key as
// base.pem and base-key.pem.
func (s *Security) issue(r pki.Request, base string) (certFile, keyFile string, err error) {
	c, k, err := s.ca.Issue(r)
	if err != nil {
		return "", "", fmt.Errorf("security: %w", err)
	}
	certFile, keyFile = filepath.Join(s.Dir, base+".pem"), filepath.Join(s.Dir, base+"-key.pem")
	if err := writeSecret(certFile, c); err != nil {
		return "", "", err
	}
	if err := writeSecret(keyFile, k); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func writeSecret(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("security: %w", err)
	}
	return nil
}

// AgentArgs are the `ledgerd agent` flags that secure node: mutual TLS on
// Raft and on the HTTP API (every API client must present a certificate
// of the cluster CA as well as a token), encrypted gossip, and the tokens
// file.
func (s *Security) AgentArgs(node string) ([]string, error) {
	f, ok := s.servers[node]
	if !ok {
		return nil, fmt.Errorf("security: no certificate for node %q", node)
	}
	return []string{
		"-tls-cert-file", f[0], "-tls-key-file", f[1], "-tls-ca-file", s.CAFile,
		"-tls-verify-incoming=true", "-tls-http=true", "-tls-http-require-client-cert=true",
		"-gossip-key", s.GossipKey, "-tokens-file", s.TokensFile,
	}, nil
}

// ClientTLS is what the harness's clients dial the nodes with: the
// cluster CA as the only root and the client certificate.
func (s *Security) ClientTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.roots, Certificates: []tls.Certificate{s.client}}
}
