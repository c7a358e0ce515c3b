package cluster

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/hashicorp/raft"
)

// sinkConfig is a configuration of two voters and a non-voter, whose
// encoded peers (the voters only) end up in the metadata.
func sinkConfig() raft.Configuration {
	return raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:7001"},
		{Suffrage: raft.Nonvoter, ID: "n2", Address: "127.0.0.1:7002"},
		{Suffrage: raft.Voter, ID: "n3", Address: "127.0.0.1:7003"},
	}}
}

// writeSnapshot creates a snapshot in store, writes payload to it in
// pieces of random sizes, and closes it; it returns the snapshot's ID.
func writeSnapshot(t *testing.T, store raft.SnapshotStore, index uint64, payload []byte, rng *rand.Rand) string {
	t.Helper()
	_, trans := raft.NewInmemTransport("n1")
	sink, err := store.Create(raft.SnapshotVersionMax, index, 3, sinkConfig(), 2, trans)
	if err != nil {
		t.Fatal(err)
	}
	for p := payload; len(p) > 0; {
		k := min(len(p), 1+rng.IntN(70_000))
		if n, err := sink.Write(p[:k]); err != nil || n != k {
			t.Fatalf("write: %d, %v", n, err)
		}
		p = p[k:]
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if err := sink.Cancel(); err != nil {
		t.Fatalf("Cancel after Close: %v", err)
	}
	return sink.ID()
}

// readMetaJSON returns a snapshot's meta.json with its ID's time part
// (milliseconds at Create) replaced, so that two stores' files compare.
func readMetaJSON(t *testing.T, dir, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "snapshots", id, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"ID":"(\d+-\d+)-\d+"`).ReplaceAll(b, []byte(`"ID":"$1-T"`))
}

// TestSnapshotStoreCreate: a snapshot the node's store writes is the one
// raft's file store writes, file for file (the same state.bin, the same
// meta.json but for the creation time in its ID, so the same CRC-64 and
// encoded peers), and raft's own store opens it, checking that CRC, and
// reads the same bytes back: what an earlier release, which opens every
// snapshot through raft's store, needs.
func TestSnapshotStoreCreate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, size := range []int{0, 15, 64, 1 << 20, 3<<20 + 13} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		rafts := t.TempDir()
		theirs, err := raft.NewFileSnapshotStore(rafts, 2, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		theirID := writeSnapshot(t, theirs, 40, payload, rng)

		ours := t.TempDir()
		inner, err := raft.NewFileSnapshotStore(ours, 2, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		ourID := writeSnapshot(t, newMappedSnapshotStore(inner, ours), 40, payload, rng)

		if got, want := readMetaJSON(t, ours, ourID), readMetaJSON(t, rafts, theirID); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: meta.json\n%s\nraft's store writes\n%s", size, got, want)
		}
		state, err := os.ReadFile(filepath.Join(ours, "snapshots", ourID, "state.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(state, payload) {
			t.Fatalf("%d bytes: state.bin holds %d bytes unlike what was written", size, len(state))
		}

		// raft's store reads ours, checking the CRC as it opens it.
		reader, err := raft.NewFileSnapshotStore(ours, 2, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		metas, err := reader.List()
		if err != nil || len(metas) != 1 || metas[0].ID != ourID {
			t.Fatalf("%d bytes: raft's List gives %v, %v; want %s", size, metas, err, ourID)
		}
		meta, rc, err := reader.Open(ourID)
		if err != nil {
			t.Fatalf("%d bytes: raft's store refuses the snapshot: %v", size, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: raft's store reads %d bytes (%v)", size, len(got), err)
		}
		wantMeta, theirStream, err := theirs.Open(theirID)
		if err != nil {
			t.Fatal(err)
		}
		theirStream.Close()
		wantMeta.ID, meta.ID = "", ""
		if !reflect.DeepEqual(meta, wantMeta) {
			t.Fatalf("%d bytes: metadata %+v, raft's store's %+v", size, meta, wantMeta)
		}
	}
}

// TestSnapshotSinkCancelAndReap: a cancelled snapshot leaves nothing
// behind; completed ones past the retain count are reaped, oldest first,
// as raft's store does.
func TestSnapshotSinkCancelAndReap(t *testing.T) {
	dir := t.TempDir()
	inner, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	store := newMappedSnapshotStore(inner, dir)
	rng := rand.New(rand.NewPCG(9, 10))
	var ids []string
	for i := range 3 {
		ids = append(ids, writeSnapshot(t, store, uint64(10+i), []byte("state"), rng))
	}
	_, trans := raft.NewInmemTransport("n1")
	sink, err := store.Create(raft.SnapshotVersionMax, 99, 3, sinkConfig(), 2, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("half a snapshot")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("Close after Cancel: %v", err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := ids[1:]; !reflect.DeepEqual(left, want) {
		t.Fatalf("snapshots directory holds %v, want the two newest %v (the oldest reaped, the cancelled one removed)", left, want)
	}
	if _, err := store.Create(2, 1, 1, sinkConfig(), 1, trans); err == nil {
		t.Fatal("created a snapshot of version 2, which raft's store refuses")
	}
}
