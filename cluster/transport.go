package cluster

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is the Raft stream layer: plain TCP, or TLS when a config is
// given (mutual TLS when the config asks for client certificates).
type streamLayer struct {
	net.Listener
	advertise net.Addr
	tls       *tls.Config
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func newStreamLayer(bind, advertise string, tlsConf *tls.Config) (*streamLayer, error) {
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
	s := &streamLayer{Listener: ln, advertise: adv, tls: tlsConf}
	if tlsConf != nil {
		s.Listener = tls.NewListener(ln, tlsConf)
	}
	return s, nil
}

// Addr returns the advertised address, which is what raft tells peers.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Dial opens a connection to a peer's Raft transport.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if s.tls == nil {
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
