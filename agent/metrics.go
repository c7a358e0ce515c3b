package agent

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// utilizationWindow is the window, from the log time, over which
// ledgerd_fsm_resource_utilization_ratio measures bookings.
const utilizationWindow = 24 * time.Hour

// ledgerCollector exports the ledger's state as Prometheus gauges. It reads
// the FSM through its locked read methods at scrape time, so the FSM's
// apply path knows nothing of metrics. Every replica reports its own
// applied state (a follower may lag the leader by a few entries).
type ledgerCollector struct {
	f *fsm.FSM

	holds, pendingMods, reservations, logTime, idemKeys, history  *prometheus.Desc
	capacity, inUse, utilization, scrapeErrors                    *prometheus.Desc
	relaxed, violations, pushes, waitingJobs, pinnedJobs, samples *prometheus.Desc
	retention, maxEnded, maxKeys                                  *prometheus.Desc
}

func newLedgerCollector(f *fsm.FSM) *ledgerCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &ledgerCollector{
		f:            f,
		holds:        d("ledgerd_fsm_holds", "Outstanding holds: HELD reservations plus pending (held, uncommitted) modifications."),
		pendingMods:  d("ledgerd_fsm_pending_modifications", "Pending (held, uncommitted) modifications."),
		reservations: d("ledgerd_fsm_reservations", "Retained reservations by state (terminal ones until pruned).", "state"),
		logTime:      d("ledgerd_fsm_log_time_seconds", "Log time: the leader's clock stamped into the last applied command (Unix seconds)."),
		idemKeys:     d("ledgerd_fsm_idempotency_keys", "Remembered idempotency keys."),
		history:      d("ledgerd_fsm_history_events", "Retained events of the watch history."),
		capacity:     d("ledgerd_fsm_resource_capacity", "Capacity of the resource at the log time, in its units.", "resource"),
		inUse:        d("ledgerd_fsm_resource_in_use", "Units of the resource booked at the log time.", "resource"),
		utilization: d("ledgerd_fsm_resource_utilization_ratio",
			"Booked share of the resource's capacity over the next 24 hours from the log time (booked area / capacity area).", "resource"),
		scrapeErrors: d("ledgerd_fsm_metrics_errors", "1 if the last scrape could not compute the per-resource utilization."),
		relaxed:      d("ledgerd_fsm_relaxed_admissions_total", "Reservations a RELAXED resource admitted by overlapping others, applied by this replica since it started or restored a snapshot."),
		violations: d("ledgerd_fsm_violations_total",
			"Bookings that were due to start while capacity was genuinely short (reservations then run DEGRADED), by resource, applied by this replica since it started or restored a snapshot.", "resource"),
		pushes:      d("ledgerd_fsm_variable_job_pushes_total", "Times a variable job was moved later to admit a reservation (MOVE_VARIABLE), applied by this replica since it started or restored a snapshot."),
		waitingJobs: d("ledgerd_fsm_variable_jobs_waiting", "Planned variable jobs that have not started."),
		pinnedJobs:  d("ledgerd_fsm_variable_jobs_pinned", "Waiting variable jobs moved as often as their resource allows; they are not moved again."),
		samples:     d("ledgerd_fsm_release_model_samples", "Completions recorded in the release-time model RELAXED admission learns from."),
		retention:   d("ledgerd_fsm_ended_retention_seconds", "How long ended reservations stay readable after their last change: the retention in force in the log (ended_retention)."),
		maxEnded:    d("ledgerd_fsm_ended_max", "Most ended reservations kept, those that ended first dropped first; 0: no limit (ended_max, as in force in the log)."),
		maxKeys:     d("ledgerd_fsm_idempotency_max_keys", "Most idempotency keys remembered, past the minimum age (idempotency_max_keys, as in force: the log's once an entry set it, else this server's)."),
	}
}

// Describe implements prometheus.Collector.
func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.holds, c.pendingMods, c.reservations, c.logTime, c.idemKeys,
		c.history, c.capacity, c.inUse, c.utilization, c.scrapeErrors,
		c.relaxed, c.violations, c.pushes, c.waitingJobs, c.pinnedJobs, c.samples, c.retention, c.maxEnded, c.maxKeys} {
		ch <- d
	}
}

// stateLabel turns STATE_COMMITTED into "committed".
func stateLabel(s fsmv1.Reservation_State) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "STATE_"))
}

// Collect implements prometheus.Collector.
func (c *ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := c.f.Stats()
	g(c.holds, float64(st.HoldsOutstanding))
	g(c.pendingMods, float64(st.PendingModifications))
	g(c.logTime, float64(st.NowMillis)/1000)
	g(c.idemKeys, float64(st.IdempotencyKeys))
	g(c.history, float64(st.HistoryLen))
	ret := c.f.Retention()
	g(c.retention, float64(ret.Millis)/1000)
	g(c.maxEnded, float64(ret.MaxEnded))
	g(c.maxKeys, float64(ret.IdempotencyMaxKeys))
	// Every state is exported, zeros included, so rates and alerts see a
	// series before the first reservation reaches a state.
	for v := range fsmv1.Reservation_State_name {
		s := fsmv1.Reservation_State(v)
		if s == fsmv1.Reservation_STATE_UNKNOWN {
			continue
		}
		g(c.reservations, float64(st.ByState[s]), stateLabel(s))
	}
	for _, r := range st.Resources {
		g(c.capacity, float64(r.Capacity), r.Name)
		g(c.inUse, float64(r.InUse), r.Name)
	}
	c.collectPolicy(ch, st.Resources)
	usage, err := c.f.UsageAhead(utilizationWindow.Milliseconds())
	if err != nil {
		g(c.scrapeErrors, 1)
		return
	}
	g(c.scrapeErrors, 0)
	for _, u := range usage {
		g(c.utilization, u.Utilization, u.Name)
	}
}

// collectPolicy exports the admission-policy counters and gauges. Every
// resource gets a violations series, zero included, so that alerts on its
// rate see the series before the first violation.
func (c *ledgerCollector) collectPolicy(ch chan<- prometheus.Metric, resources []fsm.ResourceStats) {
	m := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	ps := c.f.PolicyStats()
	m(c.relaxed, prometheus.CounterValue, float64(ps.RelaxedAdmissions))
	m(c.pushes, prometheus.CounterValue, float64(ps.Pushes))
	for _, r := range resources {
		m(c.violations, prometheus.CounterValue, float64(ps.Violations[r.Name]), r.Name)
	}
	m(c.waitingJobs, prometheus.GaugeValue, float64(ps.WaitingJobs))
	m(c.pinnedJobs, prometheus.GaugeValue, float64(ps.PinnedJobs))
	m(c.samples, prometheus.GaugeValue, float64(ps.ReleaseSamples))
}
