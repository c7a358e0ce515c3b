package main

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

	holds, pendingMods, reservations, logTime, idemKeys, history *prometheus.Desc
	capacity, inUse, utilization, scrapeErrors                   *prometheus.Desc
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
	}
}

// Describe implements prometheus.Collector.
func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.holds, c.pendingMods, c.reservations, c.logTime, c.idemKeys,
		c.history, c.capacity, c.inUse, c.utilization, c.scrapeErrors} {
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
