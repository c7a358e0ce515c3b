package fsm

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ledgerd/ledgerd/planner"
)

// TestBulkRestoreMatchesReplay checks the bulk planner load of Restore
// against replaying the log: at several points of a random stream, a
// state restored from a snapshot (on the indexed and on the list
// timeline) must hold the free profile of the replayed one on every
// resource, write the same snapshot bytes, and from then on give the same
// answer to every command.
func TestBulkRestoreMatchesReplay(t *testing.T) {
	factories := map[string]planner.TimelineFactory{"indexed": planner.NewIndexed, "list": planner.NewList}
	for _, seed := range seeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := &gen{r: rand.New(rand.NewPCG(seed, 0xb01c)), now: 1_000}
			cmds := g.stream(t, *propSteps)
			replay := newHarness(t, propConfig)
			var copies []*FSM
			for i, cmd := range cmds {
				idx := uint64(i + 1)
				want := replay.f.ApplyCommand(idx, cmd)
				for j, c := range copies {
					if got := c.ApplyCommand(idx, cmd); !bytes.Equal(got, want) {
						t.Fatalf("step %d: restored copy %d answered differently", i, j)
					}
				}
				if i%(len(cmds)/3+1) != len(cmds)/4 {
					continue
				}
				snap := snapshotBytes(t, replay.f)
				for _, name := range slices.Sorted(maps.Keys(factories)) {
					cfg := propConfig
					cfg.Timelines = factories[name]
					c, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					if err := c.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
						t.Fatalf("step %d: restore on %s: %v", i, name, err)
					}
					sameProfiles(t, fmt.Sprintf("step %d on %s", i, name), replay.f, c)
					if again := snapshotBytes(t, c); !bytes.Equal(again, snap) {
						t.Fatalf("step %d on %s: restored state writes different bytes", i, name)
					}
					copies = append(copies, c)
				}
			}
			if len(copies) == 0 {
				t.Fatal("no restore point in the stream")
			}
			for j, c := range copies {
				sameProfiles(t, fmt.Sprintf("end, copy %d", j), replay.f, c)
			}
		})
	}
}

// sameProfiles fails unless got's planner has want's free blocks on every
// resource from the log time on.
func sameProfiles(t *testing.T, what string, want, got *FSM) {
	t.Helper()
	for _, r := range want.Resources() {
		wb, err := want.Availability(r.GetName(), want.Now(), planner.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		gb, err := got.Availability(r.GetName(), got.Now(), planner.MaxTime)
		if err != nil || !slices.Equal(gb, wb) {
			t.Fatalf("%s: free blocks of %s\n got  %v (%v)\n want %v", what, r.GetName(), gb, err, wb)
		}
	}
}
