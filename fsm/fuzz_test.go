package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// fuzzBase returns a state machine holding resources and reservations in
// every live state, so fuzzed commands meet real state.
func fuzzBase(t testing.TB) *FSM {
	t.Helper()
	f, err := New(Config{DefaultHoldTTL: 100, MaxHoldTTL: 1000})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, f: f}
	h.must(1000, OK, createRes("cpu", 16))
	h.must(1000, OK, createRes("gpu", 4))
	h.must(1000, OK, hold("a", "cpu", 4, 100, withStart(1500)))
	h.must(1000, OK, reserve("b", "gpu", 2, 100, withStart(1200)))
	h.must(1000, OK, reserve("c", "cpu", 2, 1000, withStart(1000)))
	h.must(1000, OK, modify("b", nil, ptr(int64(1300)), nil))
	// Policy resources with a waiting job, a running and a held
	// scheduled reservation.
	h.must(1000, OK, createPolicyRes("batch", 10, spec(MOVE, 0, 0)))
	h.must(1000, OK, createPolicyRes("lax", 10, spec(RELAXED, 10, 0)))
	h.must(1000, OK, submitJob("j", "batch", 4, 100, 1500))
	h.must(1000, OK, reserve("run", "lax", 6, 500, withStart(1000)))
	h.must(1000, OK, hold("h", "batch", 8, 100, withStart(1200)))
	return f
}

func ptr[T any](v T) *T { return &v }

func addCommandSeeds(f *testing.F) {
	for _, g := range slices.Concat(goldenCommands(), bridgeGoldenCommands()) {
		if b, err := os.ReadFile(filepath.Join("testdata", "commands", g.file)); err == nil {
			f.Add(b)
		}
	}
	gg := &gen{r: rand.New(rand.NewPCG(1, 2)), now: 1_000}
	for _, b := range gg.stream(f, 30) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x63, 0x10, 0x01})
}

// FuzzApply feeds arbitrary bytes through the path a write takes: the
// cluster layer's Decode check (which must refuse, with ErrMalformed,
// anything Apply would panic on), then Apply. Whatever Decode accepts
// must apply without panicking, return a decodable Result with a status,
// and leave no resource overbooked.
func FuzzApply(f *testing.F) {
	addCommandSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Decode(data); err != nil {
			return
		}
		m := fuzzBase(t)
		// A group entry answers once per member.
		for _, out := range m.ApplyEntry(100, data) {
			b, _ := out.([]byte)
			res, err := DecodeResult(b)
			if err != nil {
				t.Fatalf("result: %v", err)
			}
			if res.GetStatus() == fsmv1.Result_STATUS_UNKNOWN {
				t.Fatal("result without status")
			}
		}
		checkInvariants(t, m)
		// Applying the same entry again (as a later index) must not
		// panic either.
		m.ApplyEntry(101, data)
		checkInvariants(t, m)
	})
}

// TestApplyPanicsOnMalformed documents the contract Decode protects.
func TestApplyPanicsOnMalformed(t *testing.T) {
	for name, data := range map[string][]byte{
		"garbage":      {0xff, 0xff, 0xff},
		"unknown type": {0x08, 0x63, 0x10, 0x01},
		"no payload":   {0x08, 0x04, 0x10, 0x01},
		"new version":  {0x08, 0x0a, 0x10, 0x7f, 0x82, 0x01, 0x00},
		"old version":  {0x08, 0x0c, 0x10, 0x01, 0x92, 0x01, 0x00},
		// CreateResource{name: "x", policy: {}} as a version-1 entry.
		"policy in v1": {0x08, 0x01, 0x10, 0x01, 0x52, 0x05, 0x0a, 0x01, 0x78, 0x2a, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(data); err == nil {
				t.Fatal("Decode accepted it")
			}
			m := fuzzBase(t)
			defer func() {
				if recover() == nil {
					t.Fatal("Apply did not panic")
				}
			}()
			m.ApplyCommand(100, data)
		})
	}
}

// FuzzSnapshot feeds arbitrary bytes to Restore, both as a whole file and
// as a body behind a valid header (so the checksum does not hide the
// decoder). Restore must never panic; a snapshot it accepts must re-encode
// stably (restore∘snapshot is idempotent after one round) and accept
// further commands. VerifySnapshot, run on an FSM with a state of its own,
// gives Restore's outcome and leaves that state alone.
//
// The seeds are deliberately small: the fuzzing engine minimises every new
// interesting input, which takes very long on kilobyte-sized snapshots
// (the golden snapshot is exercised by TestGoldenSnapshot instead).
func FuzzSnapshot(f *testing.F) {
	small, err := New(Config{DefaultHoldTTL: 100})
	if err != nil {
		f.Fatal(err)
	}
	h := &harness{t: f, f: small}
	h.must(1000, OK, createRes("cpu", 16))
	h.must(1000, OK, reserve("b", "cpu", 2, 100, withStart(1200)))
	h.must(1000, OK, modify("b", nil, ptr(int64(1250)), nil))
	h.must(1001, OK, hold("a", "cpu", 4, 100, withStart(1500), withKey("k")))
	h.must(1002, OK, updateRes("cpu", 12, ptr(int64(2000)), ptr(int64(3000))))
	snap := snapshotBytes(f, small)
	f.Add(snap)
	f.Add(snap[headerLen:])
	// A small state with scheduler items and a release model.
	pol, err := New(Config{DefaultHoldTTL: 100})
	if err != nil {
		f.Fatal(err)
	}
	h = &harness{t: f, f: pol}
	h.must(1000, OK, createPolicyRes("q", 4, spec(MOVE, 0, 0)))
	h.must(1000, OK, reserve("r", "q", 2, 10, withStart(1000)))
	h.must(1005, OK, complete("r", nil))
	h.must(1005, OK, submitJob("j", "q", 3, 20, 1010))
	f.Add(snapshotBytes(f, pol)[headerLen:])
	empty, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snapshotBytes(f, empty)[headerLen:])
	f.Add(materializedSnapshot(f)[headerLen:])
	// Enough rows for every scan chunk, with a limit (usage stage) and an
	// idempotency record.
	lim, err := New(Config{DefaultHoldTTL: 100})
	if err != nil {
		f.Fatal(err)
	}
	h = &harness{t: f, f: lim}
	h.must(1000, OK, createRes("cpu", 16))
	h.must(1000, OK, setLimits("*", "cpu", &fsmv1.LimitSpec{MaxUnits: 12}))
	for i := range 6 {
		h.must(1000, OK, reserve(fmt.Sprintf("r%d", i), "cpu", 2, 100, withStart(int64(1100+50*i)), withKey(fmt.Sprintf("k%d", i))))
	}
	f.Add(snapshotBytes(f, lim)[headerLen:])
	// holder checks every input with VerifySnapshot: it must agree with
	// Restore and leave holder's own state as it was.
	holder, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	(&harness{t: f, f: holder}).must(1000, OK, createRes("gpu", 4))
	held := snapshotBytes(f, holder)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, frameSnapshot(data)} {
			m, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			err = m.Restore(io.NopCloser(bytes.NewReader(in)))
			verr := holder.VerifySnapshot(io.NopCloser(bytes.NewReader(in)))
			if (err == nil) != (verr == nil) || err != nil && err.Error() != verr.Error() {
				t.Fatalf("VerifySnapshot: %v, Restore: %v", verr, err)
			}
			if !bytes.Equal(snapshotBytes(t, holder), held) {
				t.Fatal("VerifySnapshot changed the state of the FSM it ran on")
			}
			// The stages run backwards and concurrently give the same
			// outcome: the same error, or the same state.
			for name, run := range stageRunners {
				m3, merr := New(Config{})
				if merr != nil {
					t.Fatal(merr)
				}
				err3 := m3.RestoreWith(io.NopCloser(bytes.NewReader(in)), run)
				if (err == nil) != (err3 == nil) || err != nil && err.Error() != err3.Error() {
					t.Fatalf("%s: restore error %v, in order %v", name, err3, err)
				}
				if err == nil && !bytes.Equal(snapshotBytes(t, m3), snapshotBytes(t, m)) {
					t.Fatalf("%s: restored state differs from the one restored in order", name)
				}
			}
			if err != nil {
				continue
			}
			once := snapshotBytes(t, m)
			m2, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := m2.Restore(io.NopCloser(bytes.NewReader(once))); err != nil {
				t.Fatalf("re-encoded snapshot does not restore: %v", err)
			}
			if twice := snapshotBytes(t, m2); !bytes.Equal(once, twice) {
				t.Fatal("snapshot not stable after one restore round")
			}
			m.ApplyCommand(m.AppliedIndex()+1, TickCommand())
		}
	})
}
