package cluster

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/tlssniff"
)

// sniffTimeout bounds the wait for a Raft peer's first byte while a
// migration stage accepts TLS and plaintext on one port.
const sniffTimeout = 10 * time.Second

// streamLayer is the Raft stream layer: plain TCP, or TLS when a config is
// given (mutual TLS when the config asks for client certificates). During
// a move to secure (Config.Migration) the listener takes TLS and
// plaintext peers on one port, and dialTLS says which this node speaks.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	tls       *tls.Config
	dialTLS   bool
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func newStreamLayer(bind, advertise string, tlsConf *tls.Config, migration Migration) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft listen on %s: %w", bind, err)
	}
	adv := ln.Addr()
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("cluster: RaftAdvertise %q: %w", advertise, err)
		}
		adv = a
	}
	if a, ok := adv.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("cluster: RaftAdvertise: %s is not a routable address; set it explicitly", adv)
	}
	s := &streamLayer{Listener: ln, advertise: adv, tls: tlsConf, dialTLS: tlsConf != nil && migration != MigrationAccept}
	switch {
	case tlsConf != nil && migration != MigrationOff:
		// A TLS handshake starts with 0x16; Raft's plain protocol with
		// its RPC type, a small number.
		if s.Listener, err = tlssniff.NewListener(ln, tlsConf, sniffTimeout); err != nil {
			ln.Close()
			return nil, fmt.Errorf("cluster: raft listener: %w", err)
		}
	case tlsConf != nil:
		s.Listener = tls.NewListener(ln, tlsConf)
	}
	return s, nil
}

// Addr returns the advertised address, which is what raft tells peers.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Dial opens a connection to a peer's Raft transport.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if !s.dialTLS {
		return d.Dial("tcp", string(address))
	}
	conf := s.tls.Clone()
	if conf.ServerName == "" {
		host, _, err := net.SplitHostPort(string(address))
		if err == nil {
			conf.ServerName = host
		}
	}
	return (&tls.Dialer{NetDialer: d, Config: conf}).Dial("tcp", string(address))
}
