package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// retentionCommand returns a random TYPE_SET_RETENTION: retentions from
// one millisecond to longer than the property streams run, with and
// without a limit on ended rows.
func retentionCommand(r *rand.Rand) *fsmv1.Command {
	return SetRetentionCommand(Retention{
		Millis:             []int64{1, 40, 300, 5_000}[r.IntN(4)],
		MaxEnded:           []int64{0, 1, 3, 10}[r.IntN(4)],
		IdempotencyMaxKeys: []int64{0, 0, 2, 20, 1_000}[r.IntN(5)],
	})
}

// checkEnded checks the retention invariants: exactly one drop timer per
// ended row, at its last change, and no more ended rows than the limit
// unless the last entry spent its drop budget.
func checkEnded(t testing.TB, s *state, rows map[string]*fsmv1.Reservation) {
	t.Helper()
	var want []timer
	for id, r := range rows {
		if isTerminal(r.GetState()) {
			want = append(want, timer{r.GetUpdatedMillis(), timerDrop, id})
		}
	}
	sortTimers(want)
	var got []timer
	s.drops.Ascend(func(t timer) bool { got = append(got, t); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("drop timers %v, want one per ended row %v", got, want)
	}
	s.timers.Ascend(func(tm timer) bool {
		if tm.kind == timerDrop {
			t.Fatalf("drop timer %v among the other timers", tm)
		}
		return true
	})
	if s.maxEnded > 0 && int64(len(want)) > s.maxEnded && s.dropBudget > 0 {
		t.Fatalf("%d ended rows kept, the limit is %d", len(want), s.maxEnded)
	}
}

// TestSetRetentionRefusesBadValues: a bad payload is refused naming its
// field, by Check and by Apply, and changes nothing.
func TestSetRetentionRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		r     Retention
		field string
	}{
		{Retention{Millis: 0}, "set_retention.retention_millis"},
		{Retention{Millis: -5}, "set_retention.retention_millis"},
		{Retention{Millis: MaxRetentionMillis + 1}, "set_retention.retention_millis"},
		{Retention{Millis: 1000, MaxEnded: -1}, "set_retention.max_ended"},
		{Retention{Millis: 1000, IdempotencyMaxKeys: -1}, "set_retention.idempotency_max_keys"},
		{Retention{Millis: 1000, IdempotencyMaxKeys: MaxIdempotencyMaxKeys + 1}, "set_retention.idempotency_max_keys"},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.r.Millis, tc.r.MaxEnded), func(t *testing.T) {
			h := newHarness(t, propConfig)
			h.must(1_000, OK, createRes("cpu", 4))
			h.must(1_010, OK, reserve("x", "cpu", 1, 50, withStart(2_000)))
			h.must(1_020, OK, cancel("x"))
			before := snapshotBytes(t, h.f)
			cmd := SetRetentionCommand(tc.r)
			var fe *FieldError
			if err := h.f.Check(cmd); err == nil || !asFieldError(err, &fe) || fe.Path != tc.field {
				t.Fatalf("Check = %v, want a FieldError on %s", err, tc.field)
			}
			res := h.apply(1_030, cmd)
			if res.GetStatus() != fsmv1.Result_STATUS_INVALID || !strings.Contains(res.GetMessage(), tc.field) {
				t.Fatalf("Apply = %s %q, want INVALID naming %s", res.GetStatus(), res.GetMessage(), tc.field)
			}
			if got := h.f.Retention(); got != (Retention{Millis: propConfig.Retention, IdempotencyMaxKeys: DefaultIdempotencyMaxKeys}) {
				t.Fatalf("Retention = %+v after a refused entry", got)
			}
			after := snapshotBytes(t, h.f)
			// Only the applied index and log time may move.
			if len(after) != len(before) || endedCount(h.f) != 1 {
				t.Fatalf("a refused entry changed the state (%d → %d snapshot bytes, %d ended)", len(before), len(after), endedCount(h.f))
			}
		})
	}
}

// TestSetRetentionDropsOldestFirst: a limit drops the rows that ended
// first, a shorter retention drops at once the rows it has made due, and
// a longer one keeps rows the old one would have dropped.
func TestSetRetentionDropsOldestFirst(t *testing.T) {
	h := newHarness(t, propConfig) // Retention 300 ms.
	h.must(1_000, OK, createRes("cpu", 100))
	for i, id := range []string{"e1", "e2", "e3", "e4"} {
		now := int64(1_010 + 10*i)
		h.must(now, OK, reserve(id, "cpu", 1, 50, withStart(5_000)))
		h.must(now+1, OK, cancel(id))
	}
	h.must(1_100, OK, reserve("live", "cpu", 1, 50, withStart(5_000)))
	if n := endedCount(h.f); n != 4 {
		t.Fatalf("%d ended rows, want 4", n)
	}

	// A limit of 2 keeps the two that ended last.
	h.must(1_110, OK, SetRetentionCommand(Retention{Millis: 300, MaxEnded: 2}))
	assertRows(t, h, []string{"e3", "e4", "live"})
	// Another cancellation pushes out the oldest kept one.
	h.must(1_120, OK, cancel("live"))
	assertRows(t, h, []string{"e4", "live"})

	// A longer retention keeps e4 past the 300 ms it had.
	h.must(1_130, OK, SetRetentionCommand(Retention{Millis: 10_000}))
	h.must(1_500, OK, &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPIRE, Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}})
	assertRows(t, h, []string{"e4", "live"})
	// A shorter one drops what it made due in its own entry.
	h.must(1_600, OK, SetRetentionCommand(Retention{Millis: 100}))
	assertRows(t, h, nil)
	if got := h.f.Retention(); got != (Retention{Millis: 100, IdempotencyMaxKeys: DefaultIdempotencyMaxKeys, Set: true}) {
		t.Fatalf("Retention = %+v", got)
	}
	checkInvariants(t, h.f)
}

func assertRows(t *testing.T, h *harness, want []string) {
	t.Helper()
	h.f.mu.RLock()
	rows := allRows(t, h.f.st)
	h.f.mu.RUnlock()
	got := slices.Sorted(func(yield func(string) bool) {
		for id := range rows {
			if !yield(id) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	checkInvariants(t, h.f)
}

// TestRetentionLimitTrimsOldest runs the property streams, which change
// the retention now and then, and checks at every entry that the rows a
// limit dropped before their time ended no later than every ended row
// kept: the limit trims in the order the retention would have.
func TestRetentionLimitTrimsOldest(t *testing.T) {
	for _, seed := range seeds() {
		g := &gen{r: rand.New(rand.NewPCG(seed, 0x1ed9e4)), now: 1_000}
		cmds := g.stream(t, *propSteps)
		h := newHarness(t, propConfig)
		trimmed := 0
		for i, cmd := range cmds {
			h.f.mu.RLock()
			before := allRows(t, h.f.st)
			h.f.mu.RUnlock()
			out := h.f.ApplyCommand(uint64(i+1), cmd)
			if res, err := DecodeResult(out); err == nil {
				g.ids = append(g.ids, resultIDs(res)...)
			}
			h.f.mu.RLock()
			s := h.f.st
			after := allRows(t, s)
			var early, kept []timer
			for id, r := range before {
				key := timer{addSat(r.GetUpdatedMillis(), s.retention), timerDrop, id}
				if _, ok := after[id]; !ok && isTerminal(r.GetState()) && key.at > s.now {
					early = append(early, key)
				}
			}
			for id, r := range after {
				if isTerminal(r.GetState()) {
					kept = append(kept, timer{addSat(r.GetUpdatedMillis(), s.retention), timerDrop, id})
				}
			}
			h.f.mu.RUnlock()
			for _, e := range early {
				if s.maxEnded == 0 {
					t.Fatalf("seed %d step %d: %s dropped before its time without a limit", seed, i, e.id)
				}
				for _, k := range kept {
					if timerLess(k, e) {
						t.Fatalf("seed %d step %d: %s dropped by the limit while %s, which ended earlier, is kept", seed, i, e.id, k.id)
					}
				}
			}
			trimmed += len(early)
		}
		if trimmed == 0 && *propSeed == 0 && seed == 1 {
			t.Fatalf("seed %d: the stream never reached the limit", seed)
		}
	}
}

// TestRetentionSnapshot: a replica restored from a snapshot taken after
// a retention entry keeps the retention and then decides like the
// original; a snapshot without one encodes as before.
func TestRetentionSnapshot(t *testing.T) {
	h := newHarness(t, propConfig)
	h.must(1_000, OK, createRes("cpu", 100))
	plain := snapshotBytes(t, h.f)
	if msg, err := DecodeSnapshot(plain); err != nil || msg.GetRetention() != nil {
		t.Fatalf("snapshot without a retention entry: %v, retention %v", err, msg.GetRetention())
	}
	h.must(1_010, OK, SetRetentionCommand(Retention{Millis: 5_000, MaxEnded: 2}))
	for i, id := range []string{"a", "b", "c"} {
		h.must(int64(1_020+10*i), OK, reserve(id, "cpu", 1, 50, withStart(9_000)))
	}
	snap := snapshotBytes(t, h.f)
	c := restored(t, snap)
	if got := c.Retention(); got != (Retention{Millis: 5_000, MaxEnded: 2, IdempotencyMaxKeys: DefaultIdempotencyMaxKeys, Set: true}) {
		t.Fatalf("restored Retention = %+v", got)
	}
	checkInvariants(t, c)
	for i, id := range []string{"a", "b", "c"} {
		cmd := stamped(t, int64(1_100+10*i), cancel(id))
		if a, b := h.f.ApplyCommand(uint64(10+i), cmd), c.ApplyCommand(uint64(10+i), cmd); !bytes.Equal(a, b) {
			t.Fatalf("cancel %s: the restored replica answered differently", id)
		}
	}
	if a, b := snapshotBytes(t, h.f), snapshotBytes(t, c); !bytes.Equal(a, b) {
		t.Fatal("snapshots differ after the same entries")
	}
	if n := endedCount(c); n != 2 {
		t.Fatalf("%d ended rows after three cancellations with a limit of 2", n)
	}
	// A bad retention in a snapshot is refused.
	msg, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	msg.Retention.MaxEnded = -3
	bad, err := EncodeSnapshot(msg)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := New(propConfig)
	if err := f.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("Restore of a bad retention = %v", err)
	}
}

// retentionGoldenCommands are the version 6 entries of the golden script.
func retentionGoldenCommands() []goldenEntry {
	return []goldenEntry{
		{"80_set_retention.bin", 5_000, SetRetentionCommand(Retention{Millis: 60_000, MaxEnded: 1})},
		{"81_set_retention_keys.bin", 5_010, SetRetentionCommand(Retention{Millis: 60_000, MaxEnded: 1, IdempotencyMaxKeys: 2})},
	}
}

// TestGoldenRetention pins the retention entries (version 6) and the
// snapshot after 01_–25_, 80_ and 81_: the oldest ended rows are gone,
// the one that ended last is kept, and the retention and the cap on keys
// are in the snapshot.
func TestGoldenRetention(t *testing.T) {
	for _, g := range retentionGoldenCommands() {
		if dec := checkGoldenEntry(t, g); dec.GetVersion() != versionRetention {
			t.Errorf("%s: version %d, want %d", g.file, dec.GetVersion(), versionRetention)
		}
	}
	entries := slices.Concat(goldenCommands()[:edgeGolden], retentionGoldenCommands())
	statuses := slices.Concat(goldenStatuses[:edgeGolden], []fsmv1.Result_Status{OK, OK})
	f := goldenReplayOf(t, entries, statuses, "snapshot-v1-retention.golden")
	if n := endedCount(f); n != 1 {
		t.Fatalf("%d ended rows, want 1", n)
	}
	if got := f.Retention(); got != (Retention{Millis: 60_000, MaxEnded: 1, IdempotencyMaxKeys: 2, Set: true, IdempotencyMaxKeysSet: true}) {
		t.Fatalf("Retention = %+v", got)
	}
}

// endedRows applies n reserve + cancel pairs at log time now, with IDs
// prefix0, prefix1, ...: n ended rows.
func endedRows(t testing.TB, h *harness, idx *uint64, now int64, prefix string, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i)
		for _, c := range []*fsmv1.Command{reserve(id, "cpu", 1, 50, withStart(now+1_000_000)), cancel(id)} {
			res, err := DecodeResult(h.f.ApplyCommand(*idx, stamped(t, now, c)))
			if err != nil || res.GetStatus() != OK {
				t.Fatalf("%s: %v %v", id, res, err)
			}
			*idx++
		}
	}
}

// TestDropBudgetSpreadsLargeDrops: an entry drops at most
// maxDropsPerEntry ended rows, whether past the limit or past the
// retention; NextDue then says work is due at once, and the next entries
// drop the rest, the oldest first.
func TestDropBudgetSpreadsLargeDrops(t *testing.T) {
	h := newHarness(t, Config{HistoryLimit: 1})
	h.must(1_000, OK, createRes("cpu", 1<<40))
	idx := uint64(10)
	n := 2*maxDropsPerEntry + 500
	endedRows(t, h, &idx, 2_000, "a", n)
	apply := func(now int64, c *fsmv1.Command) {
		t.Helper()
		if res, err := DecodeResult(h.f.ApplyCommand(idx, stamped(t, now, c))); err != nil || res.GetStatus() != OK {
			t.Fatalf("%v: %v %v", c.GetType(), res, err)
		}
		idx++
	}
	tick := &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPIRE, Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}}
	due := func(want bool) {
		t.Helper()
		at, ok := h.f.NextDue()
		if now := h.f.Stats().NowMillis; (ok && at <= now) != want {
			t.Fatalf("NextDue = %d, %v at log time %d; want due now: %v", at, ok, now, want)
		}
	}

	// A limit of 100: one budget per entry.
	apply(3_000, SetRetentionCommand(Retention{Millis: 3_600_000, MaxEnded: 100}))
	for _, want := range []int{n - maxDropsPerEntry, n - 2*maxDropsPerEntry, 100} {
		if got := endedCount(h.f); got != want {
			t.Fatalf("%d ended rows, want %d", got, want)
		}
		checkInvariants(t, h.f)
		due(want > 100)
		apply(3_000, tick)
	}
	// The oldest went first: all ended at one log time, so in ID order,
	// and the 100 greatest IDs are kept.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("a%d", i)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if _, kept := h.f.Get(id); kept != (i >= n-100) {
			t.Fatalf("%s kept: %v", id, kept)
		}
	}

	// A shorter retention: the rows it makes due, a budget at a time.
	apply(4_000, SetRetentionCommand(Retention{Millis: 3_600_000}))
	endedRows(t, h, &idx, 5_000, "b", maxDropsPerEntry+200)
	apply(6_000, SetRetentionCommand(Retention{Millis: 500}))
	if got, want := endedCount(h.f), 100+maxDropsPerEntry+200-maxDropsPerEntry; got != want {
		t.Fatalf("%d ended rows after the first budget, want %d", got, want)
	}
	checkInvariants(t, h.f)
	due(true)
	apply(6_000, tick)
	if got := endedCount(h.f); got != 0 {
		t.Fatalf("%d ended rows after the second entry, want 0", got)
	}
	checkInvariants(t, h.f)
	due(false)
}

// BenchmarkDropEntry is the cost of the largest drop one entry makes:
// maxDropsPerEntry ended rows past a new limit, in a table holding 100k
// ended rows.
func BenchmarkDropEntry(b *testing.B) {
	h := newHarness(b, Config{HistoryLimit: 1})
	h.must(1_000, OK, createRes("cpu", 1<<40))
	idx := uint64(10)
	endedRows(b, h, &idx, 2_000, "a", 100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Lift the limit and refill what the last iteration dropped, at
		// a later log time.
		if i > 0 {
			h.f.ApplyCommand(idx, stamped(b, int64(3_000+i), SetRetentionCommand(Retention{Millis: 3_600_000})))
			idx++
			endedRows(b, h, &idx, int64(3_000+i), fmt.Sprintf("r%d-", i), maxDropsPerEntry)
		}
		limit := SetRetentionCommand(Retention{Millis: 3_600_000, MaxEnded: 100_000 - maxDropsPerEntry})
		cmd := stamped(b, int64(3_000+i), limit)
		before := endedCount(h.f)
		b.StartTimer()
		h.f.ApplyCommand(idx, cmd)
		b.StopTimer()
		idx++
		if dropped := before - endedCount(h.f); dropped != maxDropsPerEntry {
			b.Fatalf("iteration %d dropped %d rows, want %d", i, dropped, maxDropsPerEntry)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/maxDropsPerEntry, "ns/drop")
}

// TestSetRetentionCapsIdempotencyKeys: an entry's cap on idempotency keys
// replaces the replica's configured one: keys past it that are older
// than the minimum age are forgotten in that entry (a retry of one is
// applied again), younger ones are kept, and a restored replica keeps
// the cap. A zero cap in a later entry leaves it unchanged.
func TestSetRetentionCapsIdempotencyKeys(t *testing.T) {
	cfg := Config{IdempotencyMaxKeys: 1_000, IdempotencyMinAge: 1_000}
	h := newHarness(t, cfg)
	h.must(1_000, OK, createRes("cpu", 100))
	for i := range 10 {
		h.must(int64(1_100+i), OK, reserve(fmt.Sprintf("k%d", i), "cpu", 1, 50, withStart(90_000), withKey(fmt.Sprintf("key-%d", i))))
	}
	// Ten keys; a cap of 3 at log time 2_000: the keys of 1_100..1_109
	// are younger than 1 s and stay.
	h.must(2_000, OK, SetRetentionCommand(Retention{Millis: 3_600_000, IdempotencyMaxKeys: 3}))
	if n := h.f.Stats().IdempotencyKeys; n != 10 {
		t.Fatalf("%d keys after the cap while all are young, want 10", n)
	}
	// Past the minimum age the cap applies: the oldest seven go.
	h.must(3_000, OK, &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPIRE, Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}})
	if n := h.f.Stats().IdempotencyKeys; n != 3 {
		t.Fatalf("%d keys past the minimum age, want the cap of 3", n)
	}
	// A retry of a forgotten key is a new request (the ID is taken), of
	// a remembered one the first answer.
	if res := h.apply(3_010, reserve("k0", "cpu", 1, 50, withStart(90_000), withKey("key-0"))); res.GetReplayed() {
		t.Fatalf("key-0 answered from a record the cap should have forgotten: %v", res)
	}
	if res := h.apply(3_020, reserve("k9", "cpu", 1, 50, withStart(90_000), withKey("key-9"))); !res.GetReplayed() {
		t.Fatalf("key-9 not answered from its record: %v", res)
	}
	c := restored(t, snapshotBytes(t, h.f))
	want := Retention{Millis: 3_600_000, IdempotencyMaxKeys: 3, Set: true, IdempotencyMaxKeysSet: true}
	if got := c.Retention(); got != want {
		t.Fatalf("restored Retention = %+v, want %+v", got, want)
	}
	h.must(3_030, OK, SetRetentionCommand(Retention{Millis: 3_600_000}))
	if got := h.f.Retention(); got != want {
		t.Fatalf("Retention after an entry without a cap = %+v, want it unchanged %+v", got, want)
	}
	// A smaller cap applies in its own entry to keys past the minimum age.
	h.must(9_000, OK, SetRetentionCommand(Retention{Millis: 3_600_000, IdempotencyMaxKeys: 1}))
	if n := h.f.Stats().IdempotencyKeys; n != 1 {
		t.Fatalf("%d keys after a cap of 1 on old keys, want 1 in the same entry", n)
	}
}

// endedCount counts the ended rows as Stats reports them, by state: apart
// from the drop list that the limit works on.
func endedCount(f *FSM) int {
	n := 0
	for st, c := range f.Stats().ByState {
		if isTerminal(st) {
			n += c
		}
	}
	return n
}
