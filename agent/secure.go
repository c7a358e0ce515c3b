package agent

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/ledgerd/ledgerd/agent/pki"
	"github.com/ledgerd/ledgerd/cluster"
)

// checkSecure refuses a configuration that would leave a listener
// unauthenticated. A dev agent must stay on loopback; any other agent
// needs mutual TLS between servers (Raft and the internal endpoints, with
// certificates that carry the server role), an encrypted gossip key, TLS
// on the HTTP API and a tokens file — unless the operator says insecure,
// which is then logged at ERROR on every start. Each error names the
// missing key and the command that makes what it needs.
func (c *Config) checkSecure(dev bool) error {
	if dev {
		for _, a := range []struct{ key, v string }{{"http_addr", c.HTTPAddr}, {"http_advertise", c.HTTPAdvertise}} {
			if a.v != "" && !isLoopback(a.v) {
				return fmt.Errorf("config: %s: -dev serves an unauthenticated API and stays on loopback; %s is not (run a secured agent instead, see docs/operations.md)", a.key, a.v)
			}
		}
		if c.SecureMigration != "" {
			return errors.New("config: secure_migration: not used with -dev (a one-node playground has no peers to move)")
		}
		return nil
	}
	missing := c.securityGaps()
	if c.SecureMigration != "" {
		// A migration stage still accepts plaintext peers: it is an
		// insecure agent, and says so. It carries every secure setting,
		// so that the last step only removes it and insecure.
		if !c.Insecure {
			return fmt.Errorf("config: secure_migration: %q still accepts plaintext peers and callers, so it needs -insecure (insecure: true); once every server runs secure_migration=send, restart each without secure_migration and without insecure (docs/operations.md, \"Moving an insecure cluster to secure\")", c.SecureMigration)
		}
		if len(missing) > 0 {
			return errors.New("config: secure_migration: every setting of a secure agent must be in place first:\n  " + strings.Join(missing, "\n  "))
		}
		return nil
	}
	if c.Insecure || len(missing) == 0 {
		return nil
	}
	return errors.New("config: this agent would accept unauthenticated peers or callers:\n  " + strings.Join(missing, "\n  ") +
		"\nFix these (docs/operations.md, \"Securing a cluster\"), or pass -insecure (insecure: true) on a test bed")
}

// securityGaps lists what a secure agent needs and this configuration
// lacks, each with its key and the command that makes it.
func (c *Config) securityGaps() []string {
	var missing []string
	if c.TLSCertFile == "" || c.TLSKeyFile == "" || c.TLSCAFile == "" {
		missing = append(missing, "tls_cert_file, tls_key_file, tls_ca_file: required, so that only servers of the cluster speak Raft and call /internal/ (make them with `ledgerd tls ca create` and `ledgerd tls cert create -server -node NAME -ip ADDR`)")
	}
	if !c.TLSVerifyIncoming {
		missing = append(missing, "tls_verify_incoming: must be true, or anyone who reaches the Raft port can write to the log")
	}
	if !c.TLSHTTP {
		missing = append(missing, "tls_http: must be true, so that tokens and forwarded writes never cross a network in cleartext")
	}
	if c.GossipKey == "" {
		missing = append(missing, "gossip_key: required, so that only servers of the cluster gossip (make one with `ledgerd keygen`)")
	}
	if c.TokensFile == "" {
		missing = append(missing, "tokens_file: required, or every API caller is an operator (see rpc/README.md, \"Authentication\")")
	}
	return missing
}

// migrationStages maps the secure_migration setting to the cluster's
// stage.
var migrationStages = map[string]cluster.Migration{
	"":       cluster.MigrationOff,
	"accept": cluster.MigrationAccept,
	"send":   cluster.MigrationSend,
}

// isLoopback reports whether host:port names a loopback address (or
// localhost). An unspecified address (every interface) is not loopback.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requireServer guards the internal endpoints when the HTTP API is served
// over TLS: only a caller that presented a certificate of the cluster with
// the server role gets through, so neither an anonymous caller nor an API
// client holding a client certificate of the same CA can write to the log.
func requireServer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "internal endpoints need a server certificate of the cluster", http.StatusUnauthorized)
			return
		}
		if !pki.IsServer(r.TLS.PeerCertificates[0]) {
			http.Error(w, "internal endpoints are for servers: "+pki.ErrNotServer.Error(), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireServerOverTLS guards the internal endpoints while the HTTP port
// takes TLS and plaintext callers (secure_migration): a TLS caller must
// present a server certificate of the cluster, as requireServer asks; a
// plaintext caller is taken as an insecure agent takes it, which the
// cluster's own check of the internal token then decides (none in the
// accept stage, whose peers not yet restarted have no gossip key).
func requireServerOverTLS(next http.Handler) http.Handler {
	servers := requireServer(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			next.ServeHTTP(w, r)
			return
		}
		servers.ServeHTTP(w, r)
	})
}

// warnInsecure says at ERROR, on every start, what an insecure agent
// leaves open, so that it cannot go unnoticed in the logs.
func (a *Agent) warnInsecure() {
	if !a.cfg.Insecure || a.opts.Dev {
		return
	}
	var open []string
	if a.cfg.TLSCertFile == "" || !a.cfg.TLSVerifyIncoming {
		open = append(open, "Raft accepts unauthenticated peers")
	}
	if !a.cfg.TLSHTTP {
		open = append(open, "the HTTP API and /internal/ are served in cleartext")
	}
	if a.cfg.GossipKey == "" {
		open = append(open, "gossip is unencrypted and open to anyone")
	}
	if a.cfg.TokensFile == "" {
		open = append(open, "every API caller is an operator")
	}
	switch a.cfg.SecureMigration {
	case "accept":
		open = append(open, "secure_migration=accept: Raft, the HTTP API and /internal/ also take plaintext peers, peers are dialled in plaintext and gossip is sent unencrypted (next: restart every server with secure_migration=send)")
	case "send":
		open = append(open, "secure_migration=send: Raft, the HTTP API and /internal/ also take plaintext peers and gossip takes unencrypted messages (next: restart every server without secure_migration and insecure)")
	}
	a.log.Error("INSECURE agent: peers and callers are not all authenticated; do not run this outside a test bed", "open", strings.Join(open, "; "))
}
