package cluster

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/internal/testpki"
)

// TestMigrationStreamLayer: in both migration stages the Raft listener
// takes plaintext peers and TLS peers with a certificate of the cluster
// on one port (and still refuses a TLS peer without one); the stage
// decides only what this node dials. Without a stage a TLS listener
// refuses plaintext.
func TestMigrationStreamLayer(t *testing.T) {
	ca := testpki.NewCA(t, "ledgerd test CA")
	for _, tc := range []struct {
		stage       Migration
		acceptPlain bool
		dialTLS     bool
	}{
		{MigrationOff, false, true},
		{MigrationAccept, true, false},
		{MigrationSend, true, true},
	} {
		t.Run(tc.stage.String(), func(t *testing.T) {
			s, err := newStreamLayer("127.0.0.1:0", "", serverTLS(t, ca, "server"), tc.stage)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.dialTLS != tc.dialTLS {
				t.Errorf("dials TLS = %v, want %v", s.dialTLS, tc.dialTLS)
			}
			go func() {
				for {
					conn, err := s.Accept()
					if err != nil {
						return
					}
					go func() {
						defer conn.Close()
						_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
						_, _ = io.Copy(conn, conn)
					}()
				}
			}()
			addr := raft.ServerAddress(s.Addr().String())
			for _, p := range []struct {
				name string
				peer *streamLayer
				ok   bool
			}{
				{"plaintext peer", &streamLayer{}, tc.acceptPlain},
				{"TLS peer of the cluster", &streamLayer{tls: serverTLS(t, ca, "peer"), dialTLS: true}, true},
				{"TLS peer without a certificate", &streamLayer{tls: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.Pool}, dialTLS: true}, false},
			} {
				// Raft's first byte is its RPC type: 0 is AppendEntries.
				err := echo(p.peer, addr, []byte{0, 'p', 'i', 'n', 'g'})
				if p.ok != (err == nil) {
					t.Errorf("%s: echo err %v, want accepted = %v", p.name, err, p.ok)
				}
			}
		})
	}
}

// echo dials addr through d, writes msg and reads it back.
func echo(d *streamLayer, addr raft.ServerAddress, msg []byte) error {
	conn, err := d.Dial(addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	if string(buf) != string(msg) {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// TestMigrationGossipAndConfig: the stage sets memberlist's upshift
// switches, and a stage without the TLS and key it moves to is refused,
// naming the missing field.
func TestMigrationGossipAndConfig(t *testing.T) {
	key := []byte("0123456789abcdef")
	base := Config{DataDir: t.TempDir(), RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0", RPCAdvertise: "127.0.0.1:1"}
	for _, tc := range []struct {
		stage               Migration
		verifyIn, verifyOut bool
	}{
		{MigrationOff, true, true},
		{MigrationAccept, false, false},
		{MigrationSend, false, true},
	} {
		c := base
		c.Migration, c.GossipKey, c.RaftTLS = tc.stage, key, &tls.Config{}
		c, err := c.withDefaults()
		if err != nil {
			t.Fatalf("%s: %v", tc.stage, err)
		}
		mc, err := c.gossipConfig("id", &gossip{})
		if err != nil {
			t.Fatal(err)
		}
		if mc.GossipVerifyIncoming != tc.verifyIn || mc.GossipVerifyOutgoing != tc.verifyOut {
			t.Errorf("%s: gossip verify incoming/outgoing = %v/%v, want %v/%v", tc.stage, mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing, tc.verifyIn, tc.verifyOut)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no TLS", func(c *Config) { c.GossipKey = key }, "needs Config.RaftTLS"},
		{"no gossip key", func(c *Config) { c.RaftTLS = &tls.Config{} }, "needs Config.GossipKey"},
		{"unknown stage", func(c *Config) { c.Migration = 7 }, "Config.Migration: unknown stage 7"},
	} {
		c := base
		c.Migration = MigrationAccept
		tc.edit(&c)
		if _, err := c.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestMigrationInternalToken: in MigrationAccept the internal endpoints
// take callers without the cluster token (the servers not yet restarted
// have no key to derive it from); in MigrationSend they ask for it again.
func TestMigrationInternalToken(t *testing.T) {
	ca := testpki.NewCA(t, "ledgerd test CA")
	for _, tc := range []struct {
		stage Migration
		want  int // status of a call without the token
	}{
		{MigrationAccept, http.StatusOK},
		{MigrationSend, http.StatusForbidden},
	} {
		t.Run(tc.stage.String(), func(t *testing.T) {
			c := &tcluster{t: t}
			tn := c.add(0, func(cfg *Config) {
				cfg.Dev, cfg.GossipKey, cfg.Migration = true, []byte("0123456789abcdef"), tc.stage
				cfg.RaftTLS = serverTLS(t, ca, cfg.NodeName)
			})
			c.start(tn)
			t.Cleanup(c.stopAll)
			c.leader()
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + tn.rpcAddr + pathStatus)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status without the token: %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
