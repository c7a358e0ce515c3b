package cluster

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// inPlaceProbe is the ledger FSM, noting whether its restore was handed
// the snapshot's bytes in place.
type inPlaceProbe struct {
	*fsm.FSM
	inPlace bool
}

func (p *inPlaceProbe) RestoreWith(rc io.ReadCloser, run func([]func())) error {
	_, p.inPlace = rc.(fsm.SnapshotBytes)
	return p.FSM.RestoreWith(rc, run)
}

// TestMappedSnapshotRestore: a snapshot opened through the node's store
// is restored from the mapped file (on Linux) into the state a stream
// restore of the same file gives, byte for byte, and the mapping is gone
// once the restore has returned.
func TestMappedSnapshotRestore(t *testing.T) {
	waitBesideCollections(t)
	src := newTrackedFSM(mustLedger(t))
	const hour = int64(time.Hour / time.Millisecond)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	cmds := []*fsmv1.Command{{
		Type: fsmv1.Command_TYPE_CREATE_RESOURCE, IdempotencyKey: "res", Owner: "t",
		Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "gpu", Capacity: 64, Unit: "gpus"}},
	}}
	for i := range 300 {
		cmds = append(cmds, &fsmv1.Command{
			Type: fsmv1.Command_TYPE_RESERVE, IdempotencyKey: fmt.Sprintf("k-%d", i), Owner: fmt.Sprintf("o-%d", i%7),
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Id:    fmt.Sprintf("res-%04d", i),
				Parts: []*fsmv1.Part{{Resource: "gpu", Amount: int64(1 + i%4)}}, DurationMillis: hour,
				NotBeforeMillis: base + int64(i%50)*hour,
			}},
		})
	}
	for i, c := range cmds {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = fsm.Stamp(b, base-hour); err != nil {
			t.Fatal(err)
		}
		src.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: b})
	}
	dir := t.TempDir()
	files, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink, err := files.Create(raft.SnapshotVersionMax, uint64(len(cmds)), 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	want := persisted(t, src)

	// The stream, through raft's own store.
	_, rc, err := files.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	plain := &inPlaceProbe{FSM: mustLedger(t)}
	plainTracked := newTrackedFSM(plain)
	if err := plainTracked.Restore(rc); err != nil {
		t.Fatal(err)
	}
	if plain.inPlace {
		t.Fatal("raft's store's stream was taken for mapped bytes")
	}

	// The mapped file, through the node's store.
	store := newMappedSnapshotStore(files, dir)
	_, rc, err = store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	// A save streaming the same snapshot out at the same time: the
	// restore must not take its file for its own.
	_, other, err := store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(other, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	mapped := &inPlaceProbe{FSM: mustLedger(t)}
	tracked := newTrackedFSM(mapped)
	tracked.snaps = store
	// Raft hands the FSM its own wrapper of the store's stream.
	if err := tracked.Restore(opaque{rc}); err != nil {
		t.Fatal(err)
	}
	if other.(*snapshotFile).claimed {
		t.Fatal("the restore claimed the file a save was streaming")
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(store.open); n != 0 {
		t.Fatalf("%d snapshots still listed open after both were closed", n)
	}
	if runtime.GOOS == "linux" && !mapped.inPlace {
		t.Fatal("on Linux the restore read the stream instead of the mapped file")
	}
	if sf := rc.(*snapshotFile); sf.unmap != nil {
		t.Fatal("the mapping outlived the restore")
	}
	for name, f := range map[string]*trackedFSM{"stream": plainTracked, "mapped": tracked} {
		if got := persisted(t, f); !bytes.Equal(got, want) {
			t.Fatalf("%s restore: the state writes another snapshot than the one restored", name)
		}
	}
	if got := tracked.restored.Load(); got != uint64(len(cmds)) {
		t.Fatalf("restored index %d, want %d", got, len(cmds))
	}
}

// opaque hides the stream's type, as raft's byte-counting wrapper does.
type opaque struct{ io.ReadCloser }

func mustLedger(t *testing.T) *fsm.FSM {
	t.Helper()
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// persisted returns the snapshot f writes, the node's header included.
func persisted(t *testing.T, f *trackedFSM) []byte {
	t.Helper()
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := s.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}
