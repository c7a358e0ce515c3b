package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
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
