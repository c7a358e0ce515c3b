package cluster

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sentinel errors. They are always wrapped with %w, so test them with errors.Is.
var (
	// ErrNoLeader means no leader became known within Config.LeaderWait.
	ErrNoLeader = errors.New("cluster: no leader")
	// ErrNotLeader means the operation must run on the leader and this node
	// is not it (or lost leadership before the operation was queued).
	ErrNotLeader = errors.New("cluster: not the leader")
	// ErrShutdown means the node is shutting down or has shut down.
	ErrShutdown = errors.New("cluster: node is shut down")
	// ErrOutcomeUnknown means a write was handed to Raft but leadership was
	// lost (or the forwarding connection broke) before the outcome was
	// known: it may or may not have been committed. Retry with the same
	// idempotency key.
	ErrOutcomeUnknown = errors.New("cluster: outcome of write unknown")
	// ErrUnknownServer means a membership change named a server that is
	// not in the Raft configuration.
	ErrUnknownServer = errors.New("cluster: no such server")
	// ErrIsLeader means an operation that must not run on the leader
	// itself (removing it) named the leader.
	ErrIsLeader = errors.New("cluster: the server is the leader")
	// ErrNoOtherVoter means leadership cannot be handed over: no voter
	// besides the leader is in the configuration.
	ErrNoOtherVoter = errors.New("cluster: no other voter")
	// ErrBadSnapshot means a snapshot given to RestoreSnapshot is not one
	// the state machine can take (not a snapshot file, cut short,
	// corrupted or of an unknown format); nothing was changed. The error
	// is a *BadSnapshotError.
	ErrBadSnapshot = errors.New("cluster: bad snapshot")
)

// BadSnapshotError is RestoreSnapshot's error for a snapshot it refuses;
// it matches ErrBadSnapshot.
type BadSnapshotError struct {
	// Reason says what is wrong with the file.
	Reason error
}

func (e *BadSnapshotError) Error() string { return "cluster: bad snapshot: " + e.Reason.Error() }

// Unwrap returns the reason and ErrBadSnapshot.
func (e *BadSnapshotError) Unwrap() []error { return []error{ErrBadSnapshot, e.Reason} }

// SnapshotVerifier is implemented by a state machine that can check a
// snapshot without taking it. RestoreSnapshot checks every snapshot from
// outside with it before it hands it to raft: raft stops the process when
// the state machine refuses a snapshot it was given to restore.
type SnapshotVerifier interface {
	// VerifySnapshot reads the snapshot from rc (the bytes the state
	// machine's Snapshot wrote) and returns nil when Restore would take
	// it. It must not change the state machine.
	VerifySnapshot(rc io.ReadCloser) error
}

// Config configures one node. Zero durations take the defaults documented
// on each field; New validates the rest and names the offending field.
type Config struct {
	// NodeName is a human-readable name shown in Members; defaults to the
	// host name. It is not the Raft server ID (see the node-id file).
	NodeName string
	// DataDir holds raft.db, snapshots/ and the node-id file (and wal/
	// with LogStoreWAL). Required.
	DataDir string
	// LogStore is where the Raft log lives: LogStoreBoltDB (raft.db) or
	// LogStoreWAL (DataDir/wal/, hashicorp/raft-wal); raft.db stays the
	// stable store with both. Empty keeps what DataDir holds, or takes
	// DefaultLogStore for a new DataDir. A data directory keeps its kind:
	// New fails with ErrLogStoreMismatch when it holds the other one.
	LogStore string
	// RaftBind is the host:port the Raft transport listens on. Required.
	RaftBind string
	// RaftAdvertise is the host:port peers dial for Raft; defaults to the
	// bound address (which must then not be unspecified).
	RaftAdvertise string
	// GossipBind is the host:port memberlist listens on (TCP and UDP). Required.
	GossipBind string
	// GossipAdvertise is the host:port peers reach memberlist at; defaults
	// to the bound address.
	GossipAdvertise string
	// RPCAdvertise is the host:port of this node's HTTP API; carried in
	// gossip meta and used by followers to forward writes. Required.
	RPCAdvertise string
	// RetryJoin lists gossip addresses (host:port) to join, retried with
	// backoff until one answers.
	RetryJoin []string
	// BootstrapExpect is the number of servers to wait for before
	// bootstrapping a new cluster. Zero means never bootstrap (join an
	// existing cluster) unless Dev is set.
	BootstrapExpect int
	// Dev bootstraps a single-node cluster from this node alone.
	Dev bool
	// RaftTLS, when set, wraps the Raft transport in TLS; set ClientCAs and
	// ClientAuth (and Certificates + RootCAs) for mutual TLS.
	RaftTLS *tls.Config
	// RPCTLS, when set, means every server's HTTP API (RPCAdvertise) is
	// served over TLS: forwarded writes, read-index and status calls to
	// peers use https, verify the peer against RootCAs, and present
	// Certificates as a client certificate (needed when the peers require
	// mutual TLS). Nil means plain http.
	RPCTLS *tls.Config
	// GossipKey (16, 24 or 32 bytes) enables gossip encryption. Once a
	// keyring operation (GossipKeyring) has written DataDir/keyring.json,
	// that keyring is loaded at start instead.
	GossipKey []byte
	// Migration, when set, is a stage of moving a running insecure
	// cluster to secure (see Migration): the Raft listener then accepts
	// plaintext peers next to TLS ones and gossip accepts unencrypted
	// messages. It needs RaftTLS and GossipKey. RPCTLS is the caller's:
	// nil in MigrationAccept (peers' APIs are called in plaintext), set in
	// MigrationSend.
	Migration Migration
	// DeadServerGrace is how long a server must be dead in gossip before the
	// leader removes it from Raft. Default 30s.
	DeadServerGrace time.Duration
	// ForwardTimeout bounds one forwarded request (or read-index call) to
	// a leader that keeps its leadership but does not answer. A call also
	// ends, and is sent again to the new leader, as soon as this node sees
	// the leadership move (see ApplyBatch). Default 10s.
	ForwardTimeout time.Duration
	// LeaderWait bounds how long Apply and ReadBarrier wait for a leader
	// before failing with ErrNoLeader. Default 5s.
	LeaderWait time.Duration
	// Stamp, if set, is called on the leader with every command (local,
	// forwarded by a peer, or the tick) and the leader's wall clock in
	// Unix milliseconds before the command enters the log; it returns the
	// command to log. It may assume cmd is well formed: commands built in
	// this process are so by construction, and commands from peers have
	// passed Check first. An error refuses the command (class "other", as
	// for any error that is not a cluster sentinel). It runs on the
	// caller's goroutine, concurrently with other writes.
	Stamp func(cmd []byte, nowMillis int64) ([]byte, error)
	// Check, if set, is called on the leader with every command that
	// arrived from another server (the internal write endpoints) before
	// Stamp and before the command enters the log; an error refuses the
	// command, which the sender gets back as a bad request: class "other"
	// (the class of a Stamp failure), and 400 on the deprecated
	// single-command endpoint. Commands applied in this process are not
	// checked. Check must not modify cmd, and is called concurrently.
	Check func(cmd []byte) error
	// Idempotent, if set, reports whether applying cmd twice has the
	// effect of applying it once: the FSM remembers the command's
	// idempotency key and answers a repeat with the first result. Only
	// such commands are sent again to a new leader after the leadership
	// moved while their outcome was unknown (see ApplyBatch); without it
	// they fail with ErrOutcomeUnknown as before. It is called
	// concurrently, only on that path, and must not modify cmd.
	Idempotent func(cmd []byte) bool
	// Group, if set, lets several commands of one batch share a log entry
	// (group commit): on the leader, after Check and Stamp, it is called
	// with the stamped commands of the batch still to be proposed, in
	// order, and returns how many of them from the front form one entry
	// (n >= 2) and that entry, or n < 2 when the first one is to be
	// proposed alone. The entry is proposed as it is (not stamped again).
	// The FSM must answer a group entry with []any, one response per
	// member in order, each []byte, EncodedResponse or error as for a lone command; every
	// member's caller gets its own. Groups are proposed only while
	// CommonEnvelopeVersion is at least GroupVersion, so a server that
	// cannot apply them never meets one. Group runs on the caller's
	// goroutine, concurrently with other writes, and must not modify the
	// commands.
	Group func(cmds [][]byte) (entry []byte, n int)
	// GroupVersion is the FSM envelope version from which every server
	// can apply a group entry (see Group); it must be set with Group.
	GroupVersion uint32
	// Now is the wall clock handed to Stamp and compared with NextDue;
	// default time.Now. Chaos tests replace it with a skewed clock to move
	// this node's idea of log time.
	Now func() time.Time
	// Tick, if set, produces the command the leader applies for
	// time-triggered work, e.g. to expire holds: when NextDue says work is
	// due, or every TickInterval when NextDue is nil.
	Tick func() []byte
	// NextDue, if set (with Tick), reports the earliest log time, in Unix
	// milliseconds of the leader's stamping clock (Now), at which
	// time-triggered work is due, and ok=false when nothing is. The leader
	// then applies Tick once Now reaches that time, reads NextDue again
	// whenever the FSM applies an entry (so an entry that makes work due
	// earlier re-arms the timer), waits at least TickInterval between two
	// ticks, and logs no tick at all while nothing is due. It is called
	// from the leader's tick goroutine while the FSM applies entries, so
	// it must be safe for concurrent use, and cheap.
	NextDue func() (atMillis int64, ok bool)
	// TickInterval is, with NextDue, the minimum gap between two ticks.
	// Default 100ms: due work then waits at most that long past its time
	// (a tenth of the old fixed period), and a stream of distinct due
	// times (holds expiring a few milliseconds apart) costs at most ten
	// tick entries a second rather than one per due time, since one tick
	// does all the work due by then. Without NextDue it is the fixed
	// period of Tick, default 1s as before.
	TickInterval time.Duration
	// ReadyLag is how many log entries this node may have left to apply,
	// behind the leader's commit index, while Ready still reports true.
	// Default 250: the lag autopilot accepts from a healthy voter
	// (MaxTrailingLogs), and at the FSM's apply rate (thousands of
	// entries a second) well under a second of catching up, so a node
	// that reports ready answers a linearizable read without a noticeable
	// wait, while a node restoring a snapshot or replaying a long tail
	// reports not ready. A negative value is refused.
	ReadyLag int
	// EnvelopeVersion is the highest FSM command envelope version this
	// node can apply; 0 means 1. It is announced in gossip, and
	// Node.CommonEnvelopeVersion reports the highest version every server
	// of the Raft configuration announces, so that a new envelope version
	// is proposed only once every server can apply it.
	EnvelopeVersion uint32
	// Insecure marks a node that runs without authenticating all its peers
	// and callers (the agent's insecure setting); it is announced in
	// gossip so that every member list shows it.
	Insecure bool
	// Logger receives structured logs; raft and memberlist logs are routed
	// into it at INFO and above. Default slog.Default().
	Logger *slog.Logger
	// Registerer, if set, receives the node's Prometheus metrics.
	Registerer prometheus.Registerer

	// Timing knobs, mainly for tests: zero means the hashicorp/raft default
	// (HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout 1s/1s/500ms).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
	// SnapshotThreshold and SnapshotInterval control automatic snapshots:
	// every SnapshotInterval (randomly stretched up to twice as long) Raft
	// snapshots if more than SnapshotThreshold entries were logged since
	// the last snapshot. A restart restores the newest snapshot and
	// replays only the entries after it, so these bound the replay after
	// a crash. TrailingLogs entries are kept behind a snapshot so a
	// follower that lags by less catches up from the log, not from a
	// snapshot. Zero means the raft defaults (8192, 120s, 10240).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// SnapshotLogBytes, if not zero, also takes a snapshot as soon as the
	// command bytes applied since the last snapshot reach it (snaplog.go):
	// unlike the entry threshold this bounds the replay after a crash
	// whatever the write rate and however many operations an entry
	// groups. Each snapshot writes the whole state, so a small value
	// costs CPU and disk in proportion to the state's size.
	SnapshotLogBytes uint64
	// LogCheckWindow is how many consecutive log indices one window of
	// the log check covers (logcheck.go); 0 means DefaultLogCheckWindow.
	// Servers compare windows only with peers that use the same size.
	LogCheckWindow uint64
	// LogCheckInterval is how often the node fetches its peers' log
	// check sums and compares them with its own; 0 means
	// DefaultLogCheckInterval.
	LogCheckInterval time.Duration
	// RestartTarget, if not zero, keeps the restart after a crash near
	// this long: the node measures how long restoring its snapshot and
	// applying its log take, and snapshots by log volume once the log
	// applied since the last snapshot would take longer than the target
	// leaves after the restore (restarttarget.go). SnapshotLogBytes, if
	// set too, still caps the volume.
	RestartTarget time.Duration
	// SnapshotOnShutdown takes a snapshot during a graceful Shutdown
	// (after handing over leadership, before Raft stops), so the next
	// start restores it and replays almost nothing.
	SnapshotOnShutdown bool
	// ReconcileInterval is how often the leader reconciles gossip membership
	// with the Raft configuration. Default 5s.
	ReconcileInterval time.Duration
	// ServerStabilizationTime is how long a non-voter must stay healthy
	// before it is promoted. Default 5s.
	ServerStabilizationTime time.Duration
	// MinQuorum is the number of voters dead-server cleanup never goes
	// below. Default: a majority of BootstrapExpect (1 in Dev mode).
	MinQuorum int

	// onApplyPanic, for tests in this package, replaces the panic that
	// stops a node whose FSM cannot apply an entry: it gets the message,
	// and the FSM goroutine then waits for the node to stop, as if the
	// process had died.
	onApplyPanic func(msg string)
}

// Member is one server as seen from this node: the Raft configuration
// joined with gossip health.
type Member struct {
	ID       string
	Name     string
	RaftAddr string
	RPCAddr  string
	// Role is "leader", "voter", "nonvoter" or "none" (known to gossip but
	// not in the Raft configuration).
	Role string
	// Health is the gossip state: "alive", "suspect", "failed", "left" or
	// "unknown"; or "unreachable" when gossip still says alive but this
	// node's recent status probes of the server failed (a killed or paused
	// leader shows so within a fraction of a second on its followers).
	Health string
	// Insecure is set when the server announces that it runs insecure.
	Insecure bool
}
