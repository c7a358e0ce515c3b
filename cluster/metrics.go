package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the node's Prometheus series.
type metrics struct {
	all              []prometheus.Collector
	applyDur         *prometheus.HistogramVec
	applyErrs        *prometheus.CounterVec
	forwarded        prometheus.Counter
	rerouted         prometheus.Counter
	groupEntries     prometheus.Counter
	groupedCommands  prometheus.Counter
	failureTolerance prometheus.Gauge
}

func newMetrics(n *Node) *metrics {
	m := &metrics{
		applyDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ledgerd_apply_duration_seconds",
			Help:    "Latency of Apply, from call to FSM result, by path (local on the leader, or forwarded).",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}, []string{"path"}),
		applyErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ledgerd_apply_errors_total",
			Help: "Failed Apply calls by error class.",
		}, []string{"class"}),
		rerouted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ledgerd_apply_rerouted_total",
			Help: "Writes sent again, with their idempotency key, after the leadership moved while their outcome was unknown.",
		}),
		groupEntries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ledgerd_group_entries_total",
			Help: "Log entries this node proposed as leader that carry several commands (group commit).",
		}),
		groupedCommands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ledgerd_grouped_commands_total",
			Help: "Commands this node proposed as leader inside group entries.",
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ledgerd_forwarded_writes_total",
			Help: "Writes this node forwarded to the leader.",
		}),
		failureTolerance: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ledgerd_autopilot_failure_tolerance",
			Help: "Voters that can fail without losing quorum (leader only).",
		}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	// Every class exists from the start at 0, so that rates and alerts
	// see a series before the first failure of its kind.
	for _, class := range applyErrorClasses {
		m.applyErrs.WithLabelValues(class)
	}
	m.all = []prometheus.Collector{m.applyDur, m.applyErrs, m.forwarded, m.rerouted, m.groupEntries, m.groupedCommands, m.failureTolerance,
		gauge("ledgerd_raft_state", "Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.",
			func() float64 { return float64(n.raft.State()) }),
		gauge("ledgerd_raft_is_leader", "1 if this node is the Raft leader.", func() float64 {
			if n.raft.State() == raft.Leader {
				return 1
			}
			return 0
		}),
		gauge("ledgerd_raft_commit_index", "Raft commit index.", func() float64 { return float64(n.raft.CommitIndex()) }),
		gauge("ledgerd_raft_last_index", "Last Raft log index.", func() float64 { return float64(n.raft.LastIndex()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ledgerd_snapshot_failures_total",
			Help: "Snapshots that failed to be taken or persisted since start.",
		}, func() float64 { return float64(n.fsm.snapFailures.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ledgerd_snapshots_by_log_volume_total",
			Help: "Snapshots taken since start because the log applied since the last one reached the volume limit (Config.SnapshotLogBytes, or what Config.RestartTarget leaves for the replay).",
		}, func() float64 { return float64(n.snapByVolume.Load()) }),
		gauge("ledgerd_log_bytes_since_snapshot", "Command bytes applied since the last snapshot or restore: about what a crash now would make the next start replay.",
			func() float64 { return float64(n.fsm.volume.since.Load()) }),
		gauge("ledgerd_snapshot_log_limit_bytes", "The log volume since the last snapshot at which the node snapshots (Config.SnapshotLogBytes, or what Config.RestartTarget leaves for the replay); 0: no volume trigger.",
			func() float64 { return float64(n.fsm.volume.limit.Load()) }),
		gauge("ledgerd_restart_estimate_seconds", "How long a restart after a crash now would take by the node's own measurements (Config.RestartTarget): restoring the newest snapshot, replaying the log since, and a fixed overhead; 0 without a target.",
			func() float64 { return n.fsm.restart.estimate(n.fsm.volume.since.Load()).Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ledgerd_reconcile_rounds_total",
			Help: "Rounds of the leader's membership reconciliation (gossip into the Raft configuration).",
		}, func() float64 { return float64(n.reconcileRounds.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ledgerd_membership_refused_total",
			Help: "Gossip members the leader kept out of Raft, one per member and round: no proof of being a server, or a claim on a live server's Raft address.",
		}, func() float64 { return float64(n.refusedJoins.Load()) }),
		gauge("ledgerd_fsm_applied_index", "Last index the FSM applied.", func() float64 { return float64(n.fsm.Applied()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ledgerd_log_check_windows_matched_total",
			Help: "Windows of applied log entries whose sum this node found equal to a peer's (the log check), counted once per peer.",
		}, func() float64 { m, _ := n.check.counts(); return float64(m) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ledgerd_log_check_windows_mismatched_total",
			Help: "Windows of applied log entries whose sum differed from a peer's: this node or that peer diverged from the cluster (alert on any increase).",
		}, func() float64 { _, m := n.check.counts(); return float64(m) }),
		gauge("ledgerd_ready", "1 while the node is ready (Node.Ready: a leader is known and the FSM is at most ReadyLag entries behind its commit index).", func() float64 {
			if n.Ready() {
				return 1
			}
			return 0
		}),
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range m.all {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("cluster: register metrics: %w", err)
		}
	}
	return nil
}

func (m *metrics) unregister(r prometheus.Registerer) {
	for _, c := range m.all {
		r.Unregister(c)
	}
}

// applyErrorClasses are the class labels of ledgerd_apply_errors_total.
var applyErrorClasses = []string{"fsm", "outcome_unknown", "no_leader", "not_leader", "shutdown", "other"}

func (m *metrics) observeApply(path string, start time.Time, err error) {
	if err == nil {
		m.applyDur.WithLabelValues(path).Observe(time.Since(start).Seconds())
		return
	}
	var ae *ApplyError
	class := "other"
	switch {
	case errors.As(err, &ae):
		m.applyDur.WithLabelValues(path).Observe(time.Since(start).Seconds())
		class = "fsm"
	case errors.Is(err, ErrOutcomeUnknown):
		class = "outcome_unknown"
	case errors.Is(err, ErrNoLeader):
		class = "no_leader"
	case errors.Is(err, ErrNotLeader):
		class = "not_leader"
	case errors.Is(err, ErrShutdown):
		class = "shutdown"
	}
	m.applyErrs.WithLabelValues(class).Inc()
}
