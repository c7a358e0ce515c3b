package recovery

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// encodeAt encodes and stamps cmd with log time now.
func encodeAt(t *testing.T, now int64, cmd *fsmv1.Command) []byte {
	t.Helper()
	b, err := fsm.Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = fsm.Stamp(b, now); err != nil {
		t.Fatal(err)
	}
	return b
}

func reserveCmd(id, key string, amount, dur int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Owner: "alice", IdempotencyKey: key,
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id: id, Parts: []*fsmv1.Part{{Resource: "r", Amount: amount}}, DurationMillis: dur,
		}}}
}

func cancelCmd(id string) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL, Owner: "alice",
		Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}}
}

// testLog is a log of every entry type a node's log holds: commands
// (lone and grouped, with and without idempotency keys, rejected ones,
// ticks), a no-op, a configuration entry and barriers.
func testLog(t *testing.T) []*raft.Log {
	t.Helper()
	var logs []*raft.Log
	add := func(typ raft.LogType, data []byte) {
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Term: 1, Type: typ, Data: data})
	}
	add(raft.LogConfiguration, raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "a"}}}))
	add(raft.LogNoop, nil)
	add(raft.LogCommand, encodeAt(t, 1000, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "op",
		Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "r", Capacity: 40, Unit: "cores"}}}))
	now := int64(1000)
	for i := range 150 {
		now += 7
		switch {
		case i%5 == 4:
			add(raft.LogBarrier, nil)
		case i%7 == 3:
			add(raft.LogCommand, fsm.TickCommand())
			logs[len(logs)-1].Data = encodeAt(t, now, mustDecode(t, fsm.TickCommand()))
		case i%3 == 0:
			var cmds [][]byte
			for j := range 4 {
				key := ""
				if j%2 == 0 {
					key = fmt.Sprintf("k%d-%d", i, j)
				}
				cmds = append(cmds, encodeAt(t, now, reserveCmd("", key, int64(1+j), 500)))
			}
			cmds = append(cmds, encodeAt(t, now, cancelCmd(fsm.AutoID(uint64(len(logs)-2)))))
			g, n := fsm.GroupCommands(cmds)
			if n != len(cmds) {
				t.Fatalf("group of %d commands holds %d", len(cmds), n)
			}
			add(raft.LogCommand, g)
		default:
			add(raft.LogCommand, encodeAt(t, now, reserveCmd(fmt.Sprintf("id%d", i), fmt.Sprintf("key%d", i%11), 3, 2000)))
		}
	}
	return logs
}

func mustDecode(t *testing.T, b []byte) *fsmv1.Command {
	t.Helper()
	c, err := fsm.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustSnapshotBytes is snapshotBytes that fails the test on an error.
func mustSnapshotBytes(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	b, err := snapshotBytes(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A data directory with a snapshot at index k and a raft-wal log of
// entries 1..n: restoring it and replaying its tail gives the state of an
// FSM that applied all n entries one by one, byte for byte, whichever
// entry the snapshot was taken at.
func TestReplayMatchesApplyingTheWholeLog(t *testing.T) {
	logs := testLog(t)
	ref, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			ref.ApplyEntry(l.Index, l.Data)
		}
	}
	want := mustSnapshotBytes(t, ref)
	for _, k := range []int{3, 40, 97, len(logs) - 1} {
		t.Run(fmt.Sprintf("snapshot at %d", k), func(t *testing.T) {
			dir := t.TempDir()
			writeDataDir(t, dir, logs, k)
			snap, err := ReadNewestSnapshot(dir)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Index != uint64(k) {
				t.Fatalf("snapshot index %d, want %d", snap.Index, k)
			}
			f, err := RestoreSnapshot(snap, nil)
			if err != nil {
				t.Fatal(err)
			}
			tail, err := ReadLogTail(dir, snap.Index)
			if err != nil {
				t.Fatal(err)
			}
			if len(tail.Entries) != len(logs)-k {
				t.Fatalf("tail of %d entries, want %d", len(tail.Entries), len(logs)-k)
			}
			st, err := Replay(f, tail)
			if err != nil {
				t.Fatal(err)
			}
			if st.LastIndex != uint64(len(logs)) || (k < 97 && st.Commands == 0) || (len(logs)-k > 64 && st.Batches < 2) {
				t.Fatalf("stats %+v after a snapshot at %d of %d entries", st, k, len(logs))
			}
			if n, err := tail.Operations(); err != nil || (k < 97 && (n.Groups == 0 || n.Keyed == 0 || n.Keyed == n.Operations)) || n.Operations < st.Commands {
				t.Fatalf("tail of %d commands: %+v (%v)", st.Commands, n, err)
			}
			if got := mustSnapshotBytes(t, f); !bytes.Equal(got, want) {
				t.Fatalf("replayed state differs from the whole log applied (%d against %d snapshot bytes)", len(got), len(want))
			}
			if f.AppliedIndex() != ref.AppliedIndex() {
				t.Fatalf("applied index %d, want %d", f.AppliedIndex(), ref.AppliedIndex())
			}
		})
	}
}

// writeDataDir writes what a node leaves in dir: a raft-wal log of logs
// and a file snapshot at entry k, with the cluster's header.
func writeDataDir(t *testing.T, dir string, logs []*raft.Log, k int) {
	t.Helper()
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs[:k] {
		if l.Type == raft.LogCommand {
			f.ApplyEntry(l.Index, l.Data)
		}
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "a"}}}
	_, trans := raft.NewInmemTransport("a")
	sink, err := snaps.Create(raft.SnapshotVersionMax, uint64(k), 1, cfg, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	var hdr [snapshotHeader]byte
	copy(hdr[:], "ldgrsnp1")
	binary.BigEndian.PutUint64(hdr[8:], uint64(k))
	if _, err := sink.Write(append(hdr[:], mustSnapshotBytes(t, f)...)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raft-log-store"), []byte("wal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(dir, "wal")
	if err := os.MkdirAll(wd, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := raftwal.Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
