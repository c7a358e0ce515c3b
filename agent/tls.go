package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
)

// certSource holds this server's certificate and key and reloads them
// from their files on request (SIGHUP), so a certificate is rotated
// without a restart: every TLS configuration built from the source asks it
// for the current pair on each handshake.
type certSource struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// newCertSource loads the pair named by the config, or returns nil
// without TLS.
func (c *Config) newCertSource() (*certSource, error) {
	if c.TLSCertFile == "" {
		return nil, nil
	}
	s := &certSource{certFile: c.TLSCertFile, keyFile: c.TLSKeyFile}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// reload reads the pair again; on error the current one stays in use.
func (s *certSource) reload() error {
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return fmt.Errorf("config: tls_cert_file/tls_key_file: %w", err)
	}
	s.cur.Store(&cert)
	return nil
}

// notAfter is the end of the current certificate's validity.
func (s *certSource) notAfter() time.Time {
	if c := s.cur.Load(); c != nil && c.Leaf != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}

// serve and present plug the source into a tls.Config.
func (s *certSource) serve(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cur.Load(), nil }
func (s *certSource) present(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return s.cur.Load(), nil
}

// raftTLS builds the Raft transport's TLS configuration, or nil.
func (c *Config) raftTLS() (*tls.Config, error) {
	src, err := c.newCertSource()
	if err != nil {
		return nil, err
	}
	return c.raftTLSWith(src)
}

func (c *Config) raftTLSWith(src *certSource) (*tls.Config, error) {
	if src == nil {
		return nil, nil
	}
	pem, err := os.ReadFile(c.TLSCAFile)
	if err != nil {
		return nil, fmt.Errorf("config: tls_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("config: tls_ca_file: no PEM certificates in %s", c.TLSCAFile)
	}
	conf := &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetCertificate:       src.serve,
		GetClientCertificate: src.present,
		RootCAs:              pool,
		ClientCAs:            pool,
		ClientAuth:           tls.NoClientCert,
		// Peers are servers: dial them by the server role's name and
		// accept only certificates that carry the role, so a client
		// certificate of the same CA cannot speak Raft.
		ServerName:       pki.ServerName,
		VerifyConnection: verifyServerPeer,
	}
	if c.TLSVerifyIncoming {
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}

// loadCAPool reads a PEM bundle; key names the config key in errors.
func loadCAPool(pool *x509.CertPool, key, path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %s: %w", key, err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("config: %s: no PEM certificates in %s", key, path)
	}
	return nil
}

// HTTPTLS builds the TLS configurations of the HTTP API: server is what
// the listener serves (HTTP/2 and HTTP/1.1 via ALPN; a client certificate
// is verified when presented and required with
// tls_http_require_client_cert; /internal/ additionally requires one with
// the server role, see requireServer), peer is what this node presents
// when it calls another server's internal endpoints, accepting only
// servers. Both are nil without tls_http.
func (c *Config) HTTPTLS() (server, peer *tls.Config, err error) {
	if !c.TLSHTTP {
		return nil, nil, nil
	}
	src, err := c.newCertSource()
	if err != nil {
		return nil, nil, err
	}
	return c.httpTLSWith(src)
}

func (c *Config) httpTLSWith(src *certSource) (server, peer *tls.Config, err error) {
	if !c.TLSHTTP || src == nil {
		return nil, nil, nil
	}
	servers := x509.NewCertPool()
	if err := loadCAPool(servers, "tls_ca_file", c.TLSCAFile); err != nil {
		return nil, nil, err
	}
	clients := x509.NewCertPool()
	if err := loadCAPool(clients, "tls_ca_file", c.TLSCAFile); err != nil {
		return nil, nil, err
	}
	if c.TLSHTTPClientCAFile != "" {
		if err := loadCAPool(clients, "tls_http_client_ca_file", c.TLSHTTPClientCAFile); err != nil {
			return nil, nil, err
		}
	}
	server = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: src.serve,
		NextProtos:     []string{"h2", "http/1.1"},
		ClientCAs:      clients,
		ClientAuth:     tls.VerifyClientCertIfGiven,
	}
	if c.TLSHTTPRequireClientCert {
		server.ClientAuth = tls.RequireAndVerifyClientCert
	}
	peer = &tls.Config{MinVersion: tls.VersionTLS12, GetClientCertificate: src.present, RootCAs: servers,
		ServerName: pki.ServerName, VerifyConnection: verifyServerPeer}
	return server, peer, nil
}

// verifyServerPeer checks the server role of a peer that presented a
// certificate; a listener that does not require certificates
// (tls_verify_incoming off, only with insecure) lets peers without one
// through to whatever else guards it.
func verifyServerPeer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	return pki.VerifyServerPeer(cs)
}
