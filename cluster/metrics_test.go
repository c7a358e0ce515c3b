package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// failingFSM fails Snapshot, or hands out snapshots whose Persist fails.
type failingFSM struct {
	noopFSM
	failSnapshot bool
}

type failingSnapshot struct{ noopSnapshot }

func (failingSnapshot) Persist(raft.SnapshotSink) error { return errors.New("disk full") }

func (f failingFSM) Snapshot() (raft.FSMSnapshot, error) {
	if f.failSnapshot {
		return nil, errors.New("cannot snapshot")
	}
	return failingSnapshot{}, nil
}

// TestSnapshotFailuresCounted checks what ledgerd_snapshot_failures_total
// reads: failures to take a snapshot and to persist one count, successes
// do not.
func TestSnapshotFailuresCounted(t *testing.T) {
	for _, c := range []struct {
		name string
		fsm  raft.FSM
		want uint64
	}{
		{"ok", noopFSM{}, 0},
		{"snapshot fails", failingFSM{failSnapshot: true}, 1},
		{"persist fails", failingFSM{}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTrackedFSM(c.fsm)
			if s, err := f.Snapshot(); err == nil {
				_ = s.Persist(&memSink{})
				s.Release()
			}
			if got := f.snapFailures.Load(); got != c.want {
				t.Fatalf("failures = %d, want %d", got, c.want)
			}
		})
	}
}

// TestApplyErrorClassesStartAtZero: every class of
// ledgerd_apply_errors_total is exported before its first failure, as the
// alert rules and dashboards assume.
func TestApplyErrorClassesStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(nil)
	if err := reg.Register(m.applyErrs); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "class" {
					got[l.GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
	}
	for _, class := range applyErrorClasses {
		if v, ok := got[class]; !ok || v != 0 {
			t.Errorf("class %q: exported %v (%v), want 0 from the start", class, ok, v)
		}
	}
}
