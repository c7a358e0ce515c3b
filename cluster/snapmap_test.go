package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
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
	waitStartCollections(t)
	src, dir, files, id, applied := sampleSnapshot(t)
	want := persisted(t, src)

	// The stream, through raft's own store.
	_, rc, err := files.Open(id)
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
	_, rc, err = store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	// A save streaming the same snapshot out at the same time: the
	// restore must not take its file for its own.
	_, other, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(other, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	mapped := &inPlaceProbe{FSM: mustLedger(t)}
	tracked := newTrackedFSM(mapped)
	tracked.snaps = store
	var logged bytes.Buffer
	tracked.log = slog.New(slog.NewJSONHandler(&logged, nil))
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
	if got := tracked.restored.Load(); got != applied {
		t.Fatalf("restored index %d, want %d", got, applied)
	}
	// The log line says what was restored: the source's sizes.
	var line struct {
		Msg             string `json:"msg"`
		Bookings        int    `json:"bookings"`
		IdempotencyKeys int    `json:"idempotency_keys"`
	}
	if err := json.Unmarshal(logged.Bytes(), &line); err != nil || line.Msg != "restored snapshot" {
		t.Fatalf("restore's log line %q: %v", logged.String(), err)
	}
	st := src.inner.(*fsm.FSM).Stats()
	if line.Bookings != st.Bookings || line.IdempotencyKeys != st.IdempotencyKeys || st.Bookings == 0 {
		t.Fatalf("the restore logged %d bookings and %d idempotency keys, the source holds %d and %d",
			line.Bookings, line.IdempotencyKeys, st.Bookings, st.IdempotencyKeys)
	}
}

// sampleSnapshot applies 301 commands to a ledger and persists its
// snapshot into raft's file store in a scratch directory: the FSM, the
// data directory, the store, the snapshot's ID and its index.
func sampleSnapshot(t *testing.T) (src *trackedFSM, dir string, files *raft.FileSnapshotStore, id string, index uint64) {
	t.Helper()
	src = newTrackedFSM(mustLedger(t))
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
	dir = t.TempDir()
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
	return src, dir, files, sink.ID(), uint64(len(cmds))
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

// TestSnapshotStoreOpen: the node's store opens a snapshot as raft's
// does: the same metadata and the same bytes.
func TestSnapshotStoreOpen(t *testing.T) {
	_, dir, files, id, _ := sampleSnapshot(t)
	wantMeta, rc, err := files.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	store := newMappedSnapshotStore(files, dir)
	meta, rc, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(meta, wantMeta) {
		t.Fatalf("metadata %+v, raft's store gives %+v", meta, wantMeta)
	}
	got, err := io.ReadAll(opaque{rc})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the stream gives %d bytes unlike raft's store's %d", len(got), len(want))
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Open("1-2-3"); err == nil {
		t.Fatal("opened a snapshot that does not exist")
	}
}

// TestSnapshotStoreCorruption: a state file damaged after it was written
// is refused whichever way it is read, although the node's store no
// longer checks raft's CRC before its Open returns: a stream read past
// the header fails on the CRC; a restore of the mapped file fails on the
// ledger's own checksum, or does not map a file whose header's index is
// not the snapshot's. The refused restore changes nothing.
func TestSnapshotStoreCorruption(t *testing.T) {
	waitStartCollections(t)
	empty := persisted(t, newTrackedFSM(mustLedger(t)))
	// flip flips one bit of the byte at(len(file)).
	flip := func(at func(n int) int) func([]byte) []byte {
		return func(b []byte) []byte {
			b[at(len(b))] ^= 0x20
			return b
		}
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		// mapped: a restore that may map the file is handed the mapped
		// file (on Linux), which fails with want; reading the stream
		// fails on the CRC.
		mapped bool
		want   string
	}{
		{"body", flip(func(n int) int { return n / 2 }), true, "checksum"},
		{"body's last byte", flip(func(n int) int { return n - 1 }), true, "checksum"},
		{"header's index", flip(func(int) int { return 12 }), false, "CRC mismatch"},
		{"magic", flip(func(int) int { return 0 }), false, "bad magic"},
		// The file no longer has the metadata's size: not mapped.
		{"bytes appended", func(b []byte) []byte { return append(b, 0) }, false, "CRC mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, files, id, _ := sampleSnapshot(t)
			path := filepath.Join(dir, "snapshots", id, "state.bin")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := files.Open(id); err == nil {
				t.Fatal("raft's store opened the damaged file")
			}
			store := newMappedSnapshotStore(files, dir)

			// A stream read past the header: a follower being sent the
			// snapshot.
			_, rc, err := store.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(rc, make([]byte, snapHeaderLen)); err != nil {
				t.Fatalf("reading the header: %v", err)
			}
			if _, err := io.ReadAll(rc); err == nil || !strings.Contains(err.Error(), "CRC mismatch") {
				t.Fatalf("reading past the header: %v, want a CRC mismatch", err)
			}
			rc.Close()

			// A restore through the store, mapping the file where it can,
			// and one reading the store's stream.
			for _, viaMap := range []bool{true, false} {
				_, rc, err := store.Open(id)
				if err != nil {
					t.Fatal(err)
				}
				probe := &inPlaceProbe{FSM: mustLedger(t)}
				tracked := newTrackedFSM(probe)
				if viaMap {
					tracked.snaps = store
				}
				wantMapped, want := viaMap && tc.mapped && runtime.GOOS == "linux", tc.want
				if tc.mapped && !wantMapped {
					// The stream, read past the header.
					want = "CRC mismatch"
				}
				err = tracked.Restore(opaque{rc})
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("mapping %v: restore: %v, want an error with %q", viaMap, err, want)
				}
				if probe.inPlace != wantMapped {
					t.Fatalf("mapping %v: the FSM was handed the mapped file: %v, want %v", viaMap, probe.inPlace, wantMapped)
				}
				if got := tracked.Applied(); got != 0 {
					t.Fatalf("mapping %v: applied index %d after a refused restore", viaMap, got)
				}
				if got := persisted(t, tracked); !bytes.Equal(got, empty) {
					t.Fatalf("mapping %v: a refused restore changed the state", viaMap)
				}
			}
			if n := len(store.open); n != 0 {
				t.Fatalf("%d snapshots still listed open after every stream was closed", n)
			}
		})
	}
}
