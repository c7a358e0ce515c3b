package cluster

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// batchingKV is kvFSM plus raft.BatchingFSM, to check the wrapper keeps
// batching for FSMs that support it.
type batchingKV struct {
	*kvFSM
	batches int
}

func (b *batchingKV) ApplyBatch(logs []*raft.Log) []any {
	b.batches++
	out := make([]any, len(logs))
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = b.Apply(l)
		}
	}
	return out
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestTrackedFSMAppliedIndexAndSnapshotHeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inner func() raft.FSM
	}{
		{"plain", func() raft.FSM { return newKVFSM() }},
		{"batching", func() raft.FSM { return &batchingKV{kvFSM: newKVFSM()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := tc.inner()
			f := newTrackedFSM(inner)
			res := f.ApplyBatch([]*raft.Log{
				{Index: 3, Type: raft.LogCommand, Data: []byte("a|1")},
				{Index: 4, Type: raft.LogConfiguration},
				{Index: 5, Type: raft.LogCommand, Data: []byte("b|2")},
				{Index: 6, Type: raft.LogConfiguration},
			})
			if len(res) != 4 || string(res[0].([]byte)) != "ok:1" || res[1] != nil || string(res[2].([]byte)) != "ok:2" {
				t.Fatalf("results %v", res)
			}
			if f.Applied() != 6 {
				t.Fatalf("applied %d, want 6 (the batch's last entry)", f.Applied())
			}
			if b, ok := inner.(*batchingKV); ok && b.batches != 1 {
				t.Fatalf("inner ApplyBatch called %d times, want 1", b.batches)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if err := f.waitApplied(ctx, nil, 7); err == nil {
				t.Fatal("waitApplied(7) returned before index 7 was applied")
			}
			go f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte("c|3")})
			if err := f.waitApplied(context.Background(), nil, 7); err != nil {
				t.Fatal(err)
			}

			snap, err := f.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			var sink memSink
			if err := snap.Persist(&sink); err != nil {
				t.Fatal(err)
			}
			fresh := newTrackedFSM(newKVFSM())
			if err := fresh.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
				t.Fatal(err)
			}
			if fresh.Applied() != 7 {
				t.Fatalf("restored applied %d, want 7", fresh.Applied())
			}
			if got := fresh.inner.(*kvFSM).entries(); !slices.Equal(got, []string{"1", "2", "3"}) {
				t.Fatalf("restored entries %q", got)
			}
			err = fresh.Restore(io.NopCloser(strings.NewReader("not a snapshot at all")))
			if err == nil || !strings.Contains(err.Error(), "not a ledgerd snapshot") {
				t.Fatalf("bad snapshot: %v", err)
			}
		})
	}
}
