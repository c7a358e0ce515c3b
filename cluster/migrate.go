package cluster

import "fmt"

// Migration is a stage of moving a running insecure cluster to a secure
// one by a rolling restart (docs/operations.md, "Moving an insecure
// cluster to secure"): each server is restarted once with
// MigrationAccept, then once more with MigrationSend, then once more
// without a migration stage (a secure server). At each step every
// server still accepts what the servers not yet restarted send.
type Migration int

const (
	// MigrationOff: no migration. With RaftTLS the Raft listener accepts
	// TLS only, and with a gossip key gossip is encrypted both ways.
	MigrationOff Migration = iota
	// MigrationAccept (stage 1): the Raft listener accepts TLS (with
	// RaftTLS's checks) and plaintext on one port, peers are dialled in
	// plaintext; gossip is sent unencrypted and accepted either way; the
	// internal endpoints take callers without the cluster token, as the
	// servers not yet restarted have no gossip key to derive it from.
	MigrationAccept
	// MigrationSend (stage 2): as MigrationAccept, but peers are dialled
	// over TLS, gossip is sent encrypted, and the internal endpoints ask
	// for the cluster token again (every server has the key by now).
	MigrationSend
)

// String names the stage as the agent's secure_migration setting does.
func (m Migration) String() string {
	switch m {
	case MigrationOff:
		return "off"
	case MigrationAccept:
		return "accept"
	case MigrationSend:
		return "send"
	}
	return fmt.Sprintf("Migration(%d)", int(m))
}

// checkMigration validates Config.Migration: a stage needs the TLS
// configuration and the gossip key the cluster is moving to.
func (c Config) checkMigration() error {
	switch c.Migration {
	case MigrationOff:
		return nil
	case MigrationAccept, MigrationSend:
	default:
		return fmt.Errorf("cluster: Config.Migration: unknown stage %d", int(c.Migration))
	}
	if c.RaftTLS == nil {
		return fmt.Errorf("cluster: Config.Migration %s needs Config.RaftTLS", c.Migration)
	}
	if len(c.GossipKey) == 0 {
		return fmt.Errorf("cluster: Config.Migration %s needs Config.GossipKey", c.Migration)
	}
	return nil
}
