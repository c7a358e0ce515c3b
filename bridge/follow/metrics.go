package follow

import (
	"errors"
	"sync"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the bridge's Prometheus metrics:
//
//   - ledgerd_bridge_rounds_total{result}: rounds by result (converged,
//     incomplete: some action failed, error: the round could not run);
//   - ledgerd_bridge_drift{kind}: differences the last round found between
//     the ledger and the resource manager (missing, changed, orphan);
//   - ledgerd_bridge_errors_total{kind}: failed actions and rounds by the
//     driver's error kind (overlap, unavailable, ...);
//   - ledgerd_bridge_lag_seconds: time since the last converged round
//     (0 before the first round; grows while the bridge cannot catch up);
//   - ledgerd_bridge_reservations{state}: desired reservations of the last
//     round by materialization state;
//   - ledgerd_bridge_retries_total: retries of the driver (wired by the
//     caller through Retry);
//   - ledgerd_bridge_unit_windows_total{result}: unit windows for
//     unusable nodes and maintenance reservations added, ended, or
//     refused by the ledger (they would overbook).
type Metrics struct {
	rounds  *prometheus.CounterVec
	drift   *prometheus.GaugeVec
	errs    *prometheus.CounterVec
	states  *prometheus.GaugeVec
	retries prometheus.Counter
	windows *prometheus.CounterVec
	units   *prometheus.CounterVec

	mu            sync.Mutex
	lastConverged time.Time
	now           func() time.Time
}

// NewMetrics registers the metrics with reg. now is the clock of the lag
// (nil: time.Now).
func NewMetrics(reg prometheus.Registerer, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	m := &Metrics{
		rounds:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledgerd_bridge_rounds_total", Help: "Bridge rounds by result: converged, incomplete (an action failed) or error (the round could not run)."}, []string{"result"}),
		drift:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ledgerd_bridge_drift", Help: "Differences the last bridge round found between the ledger and the resource manager, by kind."}, []string{"kind"}),
		errs:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledgerd_bridge_errors_total", Help: "Failed bridge actions and rounds by the resource manager's error kind."}, []string{"kind"}),
		states:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ledgerd_bridge_reservations", Help: "Reservations the last bridge round wanted in the resource manager, by materialization state."}, []string{"state"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "ledgerd_bridge_retries_total", Help: "Retries of resource manager commands while it was unreachable."}),
		windows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledgerd_bridge_unit_windows_total", Help: "Unit windows the bridge wrote for unusable nodes and maintenance reservations: added, ended, or refused by the ledger (they would overbook)."}, []string{"result"}),
		units:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledgerd_bridge_unit_changes_total", Help: "Units the bridge added to or removed from the resource to follow the partition's nodes, and unit changes the ledger refused (a booking on a removed node could not move; retried next round)."}, []string{"result"}),
		now:     now,
	}
	for _, r := range []string{"added", "ended", "refused"} {
		m.windows.WithLabelValues(r)
	}
	for _, r := range []string{"added", "removed", "refused"} {
		m.units.WithLabelValues(r)
	}
	for _, r := range []string{"converged", "incomplete", "error"} {
		m.rounds.WithLabelValues(r)
	}
	for _, k := range []bridge.DriftKind{bridge.DriftMissing, bridge.DriftChanged, bridge.DriftOrphan} {
		m.drift.WithLabelValues(string(k))
	}
	for _, k := range errorKinds {
		m.errs.WithLabelValues(kindName(k))
	}
	m.errs.WithLabelValues("other")
	for _, s := range []bridge.State{bridge.StatePending, bridge.StateMaterialized, bridge.StateFailed} {
		m.states.WithLabelValues(string(s))
	}
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ledgerd_bridge_lag_seconds", Help: "Seconds since the last bridge round that left the resource manager as the ledger wants it (0 before the first round)."},
		m.lag)
	reg.MustRegister(m.rounds, m.drift, m.errs, m.states, m.retries, m.windows, m.units, lag)
	return m
}

// Retry counts one retry of a driver command (slurm.Config.OnRetry).
func (m *Metrics) Retry(string, int, error) {
	if m != nil {
		m.retries.Inc()
	}
}

var errorKinds = []error{bridge.ErrOverlap, bridge.ErrNodesBusy, bridge.ErrDuplicateName, bridge.ErrInvalidName, bridge.ErrTimeInPast,
	bridge.ErrUnknownReservation, bridge.ErrInUse, bridge.ErrInvalidNodes, bridge.ErrInvalidUser, bridge.ErrUnknownPartition,
	bridge.ErrUnavailable, bridge.ErrNotOwned, bridge.ErrOther}

func kindName(k error) string {
	switch k {
	case bridge.ErrOverlap:
		return "overlap"
	case bridge.ErrNodesBusy:
		return "nodes_busy"
	case bridge.ErrDuplicateName:
		return "duplicate_name"
	case bridge.ErrInvalidName:
		return "invalid_name"
	case bridge.ErrTimeInPast:
		return "time_in_past"
	case bridge.ErrUnknownReservation:
		return "unknown_reservation"
	case bridge.ErrInUse:
		return "in_use"
	case bridge.ErrInvalidNodes:
		return "invalid_nodes"
	case bridge.ErrInvalidUser:
		return "invalid_user"
	case bridge.ErrUnknownPartition:
		return "unknown_partition"
	case bridge.ErrUnavailable:
		return "unavailable"
	case bridge.ErrNotOwned:
		return "not_owned"
	case bridge.ErrOther:
		return "refused"
	}
	return "other"
}

func errKind(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k) {
			return kindName(k)
		}
	}
	return "other"
}

func (m *Metrics) lag() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastConverged.IsZero() {
		return 0
	}
	return m.now().Sub(m.lastConverged).Seconds()
}

// observe records a round.
func (m *Metrics) observe(rep Report, err error, at time.Time) {
	if m == nil {
		return
	}
	switch {
	case err != nil:
		m.rounds.WithLabelValues("error").Inc()
		m.errs.WithLabelValues(errKind(err)).Inc()
	case rep.Converged:
		m.rounds.WithLabelValues("converged").Inc()
	default:
		m.rounds.WithLabelValues("incomplete").Inc()
	}
	m.windows.WithLabelValues("added").Add(float64(rep.WindowsAdded))
	m.windows.WithLabelValues("ended").Add(float64(rep.WindowsEnded))
	m.windows.WithLabelValues("refused").Add(float64(len(rep.WindowsRefused)))
	m.units.WithLabelValues("added").Add(float64(rep.UnitsAdded))
	m.units.WithLabelValues("removed").Add(float64(rep.UnitsRemoved))
	m.units.WithLabelValues("refused").Add(float64(len(rep.UnitsRefused)))
	for _, r := range rep.Results {
		if r.Err != nil {
			m.errs.WithLabelValues(errKind(r.Err)).Inc()
		}
	}
	if err != nil && len(rep.Statuses) == 0 {
		return // nothing was read: keep the last round's gauges
	}
	counts := map[bridge.DriftKind]int{}
	for _, d := range rep.Plan.Drift {
		counts[d.Kind]++
	}
	for _, k := range []bridge.DriftKind{bridge.DriftMissing, bridge.DriftChanged, bridge.DriftOrphan} {
		m.drift.WithLabelValues(string(k)).Set(float64(counts[k]))
	}
	states := map[bridge.State]int{}
	for _, s := range rep.Statuses {
		states[s.State]++
	}
	for _, s := range []bridge.State{bridge.StatePending, bridge.StateMaterialized, bridge.StateFailed} {
		m.states.WithLabelValues(string(s)).Set(float64(states[s]))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil && rep.Converged {
		m.lastConverged = at
	} else if m.lastConverged.IsZero() {
		// Lag counts from the first round that did not converge.
		m.lastConverged = at
	}
}
