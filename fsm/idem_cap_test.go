package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// TestIdempotencyMaxKeys checks the count cap on remembered keys: the
// count never exceeds it, the oldest keys are forgotten first (a retry of
// one is applied again, a retry of a newer one is replayed), and a
// replica restored from a snapshot written under a larger cap ends equal
// to one that applied the whole log under the small cap.
func TestIdempotencyMaxKeys(t *testing.T) {
	const maxKeys = 5
	small := Config{IdempotencyWindow: 100_000, IdempotencyMaxKeys: maxKeys}
	large := Config{IdempotencyWindow: 100_000, IdempotencyMaxKeys: 1000}
	capped, wide := newHarness(t, small), newHarness(t, large)
	for _, h := range []*harness{capped, wide} {
		h.must(0, OK, createRes("cpu", 1000))
	}
	ids := map[string]string{}
	for i := range 12 {
		key := fmt.Sprintf("k%d", i)
		now := int64(10 + i)
		res := capped.must(now, OK, hold("", "cpu", 1, 10, withKey(key), withStart(5000)))
		wide.must(now, OK, hold("", "cpu", 1, 10, withKey(key), withStart(5000)))
		ids[key] = res.GetReservation().GetId()
		if n := capped.f.Stats().IdempotencyKeys; n != min(i+1, maxKeys) {
			t.Fatalf("after %d keyed writes: %d keys remembered, want %d", i+1, n, min(i+1, maxKeys))
		}
	}
	// The wide replica's snapshot holds all 12 keys; restored under the
	// small cap it keeps the newest 5, as the capped replica does.
	back, err := New(small)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, wide.f)))); err != nil {
		t.Fatal(err)
	}
	if n := back.Stats().IdempotencyKeys; n != maxKeys {
		t.Fatalf("restored under the cap: %d keys, want %d", n, maxKeys)
	}
	if !bytes.Equal(snapshotBytes(t, back), snapshotBytes(t, capped.f)) {
		t.Fatal("restored replica's snapshot differs from the capped replica's")
	}
	restored := &harness{t: t, f: back, index: capped.index}
	for _, h := range []*harness{capped, restored} {
		// k7..k11 are remembered: a retry is replayed with the first ID.
		again := h.must(100, OK, hold("", "cpu", 1, 10, withKey("k11"), withStart(5000)))
		if !again.GetReplayed() || again.GetReservation().GetId() != ids["k11"] {
			t.Fatalf("retry of the newest key: replayed %v, id %q, want %q", again.GetReplayed(), again.GetReservation().GetId(), ids["k11"])
		}
		// k0 was forgotten first: its retry is applied again.
		fresh := h.must(101, OK, hold("", "cpu", 1, 10, withKey("k0"), withStart(5000)))
		if fresh.GetReplayed() || fresh.GetReservation().GetId() == ids["k0"] {
			t.Fatalf("retry of the oldest key was replayed: %v", fresh)
		}
	}
	if !bytes.Equal(snapshotBytes(t, restored.f), snapshotBytes(t, capped.f)) {
		t.Fatal("replicas differ after the same entries")
	}
	if _, err := New(Config{IdempotencyMaxKeys: -1}); err == nil {
		t.Fatal("negative IdempotencyMaxKeys accepted")
	}
}
