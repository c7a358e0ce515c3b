package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// stageRunners are the ways a caller may run the stages of a restore:
// in order, backwards, and all at once on their own goroutines (what the
// cluster package does). Under -race the last one also checks that the
// stages share no data they write.
var stageRunners = map[string]StageRunner{
	"in order": nil,
	"backwards": func(stages []func()) {
		for _, f := range slices.Backward(stages) {
			f()
		}
	},
	"concurrent": func(stages []func()) {
		var wg sync.WaitGroup
		for _, f := range stages {
			wg.Go(f)
		}
		wg.Wait()
	},
}

func restoredWith(t testing.TB, cfg Config, snap []byte, run StageRunner) *FSM {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RestoreWith(io.NopCloser(bytes.NewReader(snap)), run); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRestoreStagesAnyOrder: however the stages of a restore are run, the
// restored state writes the snapshot it was restored from byte for byte,
// and then answers every later entry exactly as the replica it was taken
// from (results and final snapshots byte-identical).
func TestRestoreStagesAnyOrder(t *testing.T) {
	for _, seed := range seeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := &gen{r: rand.New(rand.NewPCG(seed, 0x5ca9e5)), now: 1_000}
			cmds := g.stream(t, *propSteps)
			a := newHarness(t, propConfig)
			mid := len(cmds) / 2
			for i, cmd := range cmds[:mid] {
				if res, err := DecodeResult(a.f.ApplyCommand(uint64(i+1), cmd)); err == nil {
					g.ids = append(g.ids, resultIDs(res)...)
				}
			}
			snap := snapshotBytes(t, a.f)
			replicas := map[string]*FSM{}
			for name, run := range stageRunners {
				r := restoredWith(t, propConfig, snap, run)
				if again := snapshotBytes(t, r); !bytes.Equal(snap, again) {
					t.Fatalf("%s: snapshot→restore→snapshot changed the bytes", name)
				}
				checkInvariants(t, r)
				replicas[name] = r
			}
			for i, cmd := range cmds[mid:] {
				idx := uint64(mid + i + 1)
				want := a.f.ApplyCommand(idx, cmd)
				for name, r := range replicas {
					if got := r.ApplyCommand(idx, cmd); !bytes.Equal(got, want) {
						t.Fatalf("%s: entry %d answered differently", name, idx)
					}
				}
			}
			final := snapshotBytes(t, a.f)
			for name, r := range replicas {
				if !bytes.Equal(snapshotBytes(t, r), final) {
					t.Fatalf("%s: final snapshots differ", name)
				}
			}
		})
	}
}

// TestRestoreStagesGoldens: every stored golden snapshot (units, series,
// limits, policies, the bridge's records) restores the same way under
// every runner, and writes the same bytes back.
func TestRestoreStagesGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "snapshot-*.golden"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden snapshots: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			snap, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, name := range []string{"in order", "backwards", "concurrent"} {
				got := snapshotBytes(t, restoredWith(t, Config{}, snap, stageRunners[name]))
				if want == nil {
					want = got
				} else if !bytes.Equal(got, want) {
					t.Fatalf("%s: snapshot differs from the one restored in order", name)
				}
			}
			// Restoring what a restore wrote gives it back.
			if again := snapshotBytes(t, restoredWith(t, Config{}, want, stageRunners["concurrent"])); !bytes.Equal(again, want) {
				t.Fatal("snapshot→restore→snapshot changed the bytes")
			}
		})
	}
}

// TestRestoreStagesFirstError: a snapshot that two stages refuse (the
// planner: overbooked; the idempotency records: a duplicate key) is
// refused with the records' error (they are read first, as before the
// restore had stages) under every runner, and leaves the state as it
// was; without the duplicate, with the planner's.
func TestRestoreStagesFirstError(t *testing.T) {
	row := func(id string) *fsmv1.Reservation {
		return &fsmv1.Reservation{Id: id, Owner: "t", Parts: []*fsmv1.Part{{Resource: "cpu", Amount: 1}},
			StartMillis: 100, EndMillis: 200, State: fsmv1.Reservation_STATE_COMMITTED, UpdatedVersion: 1, UpdatedMillis: 10}
	}
	res := &fsmv1.Result{Status: fsmv1.Result_STATUS_OK}
	bad, err := EncodeSnapshot(&fsmv1.Snapshot{
		AppliedIndex: 3, NowMillis: 10,
		Resources:    []*fsmv1.Resource{{Name: "cpu", Capacity: 1}},
		Reservations: []*fsmv1.Reservation{row("a"), row("b")},
		Idempotency: []*fsmv1.IdempotencyRecord{
			{Owner: "t", Key: "k", AtMillis: 5, Result: res},
			{Owner: "t", Key: "k", AtMillis: 6, Result: res},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := DecodeSnapshot(bad)
	if err != nil {
		t.Fatal(err)
	}
	msg.Idempotency = msg.Idempotency[:1]
	overbooked, err := EncodeSnapshot(msg)
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range stageRunners {
		for _, tc := range []struct {
			snap []byte
			want string
		}{{bad, "idempotency[1]: duplicate key"}, {overbooked, "reservations:"}} {
			t.Run(name, func(t *testing.T) {
				h := newHarness(t, propConfig)
				before := snapshotBytes(t, h.f)
				err := h.f.RestoreWith(io.NopCloser(bytes.NewReader(tc.snap)), run)
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				if !bytes.Equal(snapshotBytes(t, h.f), before) {
					t.Fatal("failed restore changed the state")
				}
			})
		}
	}
}

// TestRestoreStagesReportFirstBadRow: whatever the runner, a snapshot
// with several bad rows or records is refused with the error of the
// first one, as a scan of everything in order would find it, also where
// the rows are cut into scan chunks.
func TestRestoreStagesReportFirstBadRow(t *testing.T) {
	const n = 20
	rows := func() []*fsmv1.Reservation {
		out := make([]*fsmv1.Reservation, n)
		for i := range out {
			out[i] = &fsmv1.Reservation{Id: fmt.Sprintf("r%02d", i), Owner: "t", Parts: []*fsmv1.Part{{Resource: "cpu", Amount: 1}},
				StartMillis: int64(100 + 10*i), EndMillis: int64(105 + 10*i), State: fsmv1.Reservation_STATE_COMMITTED, UpdatedVersion: 1, UpdatedMillis: 10}
		}
		return out
	}
	// Records as raw fields: the encoder refuses what these test (a
	// duplicate key, a result whose message is not UTF-8).
	ok := encResult(t, &fsmv1.Result{Status: fsmv1.Result_STATUS_OK})
	notUTF8 := append(slices.Clone(ok), strField(2, "\xff")...)
	rec := func(key string, r []byte) []byte {
		return idemField(strField(1, "t"), strField(2, key), resultField(r))
	}
	boundary := n * 2 / scanChunks
	cases := []struct {
		name string
		edit func(*fsmv1.Snapshot)
		recs [][]byte
		want string
	}{
		{"two bad states", func(m *fsmv1.Snapshot) {
			m.Reservations[3].State = 99
			m.Reservations[15].State = 98
		}, nil, "reservations[3]: unknown state 99"},
		{"order broken at a chunk boundary", func(m *fsmv1.Snapshot) {
			m.Reservations[boundary].Id = "r00x"
			m.Reservations[17].State = 98
		}, nil, fmt.Sprintf("reservations not sorted by ID at %d", boundary)},
		{"bad row before a bad record", func(m *fsmv1.Snapshot) {
			m.Reservations[n-1].State = 98
		}, [][]byte{rec("a", notUTF8)}, fmt.Sprintf("reservations[%d]: unknown state 98", n-1)},
		{"duplicate before an undecodable result", func(*fsmv1.Snapshot) {},
			[][]byte{rec("a", ok), rec("b", ok), rec("a", ok), rec("c", ok), rec("d", ok), rec("e", notUTF8)}, "idempotency[2]: duplicate key"},
		{"undecodable result before a duplicate", func(*fsmv1.Snapshot) {},
			[][]byte{rec("a", ok), rec("b", notUTF8), rec("c", ok), rec("d", ok), rec("a", ok)}, "idempotency[1]: result"},
	}
	for _, tc := range cases {
		msg := &fsmv1.Snapshot{AppliedIndex: 3, NowMillis: 10, Resources: []*fsmv1.Resource{{Name: "cpu", Capacity: 1}}, Reservations: rows()}
		tc.edit(msg)
		good, err := EncodeSnapshot(msg)
		if err != nil {
			t.Fatal(err)
		}
		bad := frameBody(slices.Concat(append([][]byte{good[headerLen:]}, tc.recs...)...))
		for name, run := range stageRunners {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				f, err := New(Config{})
				if err != nil {
					t.Fatal(err)
				}
				err = f.RestoreWith(io.NopCloser(bytes.NewReader(bad)), run)
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
			})
		}
	}
}

// TestRestorePacksIdempotencyLog: a restore packs every sealed chunk of the
// idempotency log in its build stages, whatever the runner (under -race,
// the concurrent one checks that the packing stages share nothing), and
// the packed log writes the snapshot back byte for byte and answers every
// remembered key with its first result.
func TestRestorePacksIdempotencyLog(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 8,000 keyed reservations")
	}
	const live = 8000
	f, _ := loaded(t, live)
	snap := snapshotBytes(t, f)
	for name, run := range stageRunners {
		r := restoredWith(t, Config{}, snap, run)
		idem := &r.st.idem
		if len(idem.chunks) < 3 {
			t.Fatalf("%s: %d chunks; the test needs several sealed ones", name, len(idem.chunks))
		}
		for i, c := range idem.chunks[:len(idem.chunks)-1] {
			if c.z == nil {
				t.Fatalf("%s: sealed chunk %d of %d left raw after the restore", name, i, len(idem.chunks))
			}
		}
		if last := idem.chunks[len(idem.chunks)-1]; last.z != nil || idem.backlog != len(idem.chunks)-1 {
			t.Fatalf("%s: last chunk packed %v, backlog %d of %d chunks; want the last raw, no backlog", name, last.z != nil, idem.backlog, len(idem.chunks))
		}
		if again := snapshotBytes(t, r); !bytes.Equal(snap, again) {
			t.Fatalf("%s: snapshot→restore (packed)→snapshot changed the bytes", name)
		}
		n := 0
		f.st.idem.view().each(func(e idemRecord) {
			n++
			if got, ok := idem.get(string(e.owner), string(e.key)); !ok || !bytes.Equal(got, e.result) {
				t.Fatalf("%s: %s/%s: remembered %v, result differs from the original's", name, e.owner, e.key, ok)
			}
		})
		if n < live {
			t.Fatalf("%s: the original remembers %d keys, want at least %d", name, n, live)
		}
	}
}
