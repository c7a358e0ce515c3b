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
	// Version 1 entries: the cap alone decides (IdempotencyMinAge applies
	// from version 3 on; a minimum age of 1 ms makes restore agree).
	small := Config{IdempotencyWindow: 100_000, IdempotencyMaxKeys: maxKeys, IdempotencyMinAge: 1}
	large := Config{IdempotencyWindow: 100_000, IdempotencyMaxKeys: 1000, IdempotencyMinAge: 1}
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

// TestIdempotencyMinAge: from envelope version 3 on, a key younger than
// IdempotencyMinAge is never forgotten for the cap, so a client still
// retrying gets its first result; older keys go first as before, and a
// replica restored from a snapshot keeps the same keys.
func TestIdempotencyMinAge(t *testing.T) {
	const maxKeys, minAge = 5, 5
	cfg := Config{IdempotencyWindow: 100_000, IdempotencyMaxKeys: maxKeys, IdempotencyMinAge: minAge}
	h := newHarness(t, cfg)
	h.must(0, OK, createRes("cpu", 1000))
	ids := map[string]string{}
	for i := range 12 {
		key := fmt.Sprintf("k%d", i)
		now := int64(10 + i)
		// Two keyed writes per millisecond of log time.
		for _, k := range []string{key + "a", key + "b"} {
			cmd := hold("", "cpu", 1, 10, withKey(k), withStart(5000))
			cmd.Version = versionEdge
			ids[k] = h.must(now, OK, cmd).GetReservation().GetId()
		}
		young := 2 * min(i+1, minAge) // keys first seen in (now-minAge, now]
		if n := h.f.Stats().IdempotencyKeys; n != max(young, min(2*(i+1), maxKeys)) {
			t.Fatalf("at %d: %d keys remembered, want %d", now, n, max(young, min(2*(i+1), maxKeys)))
		}
	}
	// The youngest keys outlive the cap; an old one is forgotten.
	for _, tc := range []struct {
		key  string
		want bool
	}{{"k11a", true}, {"k8b", true}, {"k7a", false}, {"k2a", false}} {
		k, want := tc.key, tc.want
		cmd := hold("", "cpu", 1, 10, withKey(k), withStart(5000))
		cmd.Version = versionEdge
		snap := snapshotBytes(t, h.f)
		res := h.must(22, OK, cmd)
		if res.GetReplayed() != want {
			t.Errorf("retry of %s: replayed %v, want %v", k, res.GetReplayed(), want)
		}
		// A replica restored from the snapshot before the retry answers
		// it the same way.
		back, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := back.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(snapshotBytes(t, back), snap) {
			t.Fatalf("restoring changed the remembered keys")
		}
	}
	if _, err := New(Config{IdempotencyMinAge: -1}); err == nil {
		t.Fatal("negative IdempotencyMinAge accepted")
	}
}
