package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// raftTLS builds the Raft transport's TLS configuration, or nil.
func (c *Config) raftTLS() (*tls.Config, error) {
	if c.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("config: tls_cert_file/tls_key_file: %w", err)
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
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.NoClientCert,
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
// the listener serves (HTTP/2 and HTTP/1.1 via ALPN, client certificates
// required with tls_verify_incoming), peer is what this node presents and
// checks when it calls another server's API. Both are nil without tls_http.
func (c *Config) HTTPTLS() (server, peer *tls.Config, err error) {
	if !c.TLSHTTP {
		return nil, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("config: tls_cert_file/tls_key_file: %w", err)
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
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		ClientCAs:    clients,
		ClientAuth:   tls.NoClientCert,
	}
	if c.TLSVerifyIncoming {
		server.ClientAuth = tls.RequireAndVerifyClientCert
	}
	peer = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: servers}
	return server, peer, nil
}
