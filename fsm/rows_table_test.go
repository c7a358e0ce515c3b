package fsm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ledgerd/ledgerd/internal/idhash"
)

// TestRowStoreMatchesMap drives the row table and a plain map with the
// same random inserts, replacements and deletions, over ID pools small
// enough that probe runs collide, wrap around the table's end and are
// cut by deletions, and checks after every step that the two hold the
// same rows and that the table's own invariants hold.
func TestRowStoreMatchesMap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   int
		steps int
		del   int  // per cent of steps that delete
		zero  bool // start from the zero value instead of newRowStore(0)
	}{
		{"tiny", 6, 2000, 40, false},
		{"tiny, zero value", 6, 2000, 40, true},
		{"one table", 12, 4000, 50, false},
		{"growing", 500, 5000, 10, true},
		{"churn", 300, 20000, 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.ids), uint64(tc.steps)))
			var tab rowStore
			if !tc.zero {
				tab = newRowStore(0)
			}
			model := map[string]string{}
			for step := range tc.steps {
				id := fmt.Sprintf("r%d", rng.IntN(tc.ids))
				if rng.IntN(100) < tc.del {
					tab.del(id)
					delete(model, id)
				} else {
					row := idPivot(id) + fmt.Sprintf("\x10%c", byte(step%100))
					tab.insert(id, row)
					model[id] = row
				}
				checkRowStore(t, &tab, model, step)
			}
		})
	}
}

// checkRowStore compares tab with model and checks its invariants: the
// count, the fill bound, each tag, and that every row is reachable: no
// empty cell lies between a row's home cell and its cell.
func checkRowStore(t *testing.T, tab *rowStore, model map[string]string, step int) {
	t.Helper()
	if tab.len() != len(model) {
		t.Fatalf("step %d: len %d, model %d", step, tab.len(), len(model))
	}
	if tab.n > len(tab.cells)/4*3 {
		t.Fatalf("step %d: %d rows in %d cells", step, tab.n, len(tab.cells))
	}
	for id, want := range model {
		if got, ok := tab.raw(id); !ok || got != want {
			t.Fatalf("step %d: raw(%q) = %q, %v; want %q", step, id, got, ok, want)
		}
		if !tab.has(id) {
			t.Fatalf("step %d: has(%q) = false", step, id)
		}
	}
	if _, ok := tab.raw("absent"); ok || tab.has("absent") {
		t.Fatalf("step %d: an absent ID was found", step)
	}
	mask := uint64(len(tab.cells) - 1)
	seen := 0
	for i, row := range tab.cells {
		if row == "" {
			if tab.tags[i] != 0 {
				t.Fatalf("step %d: empty cell %d keeps tag %#x", step, i, tab.tags[i])
			}
			continue
		}
		seen++
		id := rowID(row)
		if model[id] != row {
			t.Fatalf("step %d: cell %d holds %q, model has %q", step, i, row, model[id])
		}
		if tab.tags[i] != uint32(idhash.String(id)) {
			t.Fatalf("step %d: cell %d tag %#x, hash %#x", step, i, tab.tags[i], uint32(idhash.String(id)))
		}
		for k := uint64(tab.tags[i]) & mask; k != uint64(i); k = (k + 1) & mask {
			if tab.cells[k] == "" {
				t.Fatalf("step %d: row %q in cell %d is cut off from its home by empty cell %d", step, id, i, k)
			}
		}
	}
	if seen != len(model) {
		t.Fatalf("step %d: %d cells in use, model %d", step, seen, len(model))
	}
	n := 0
	for id, row := range tab.all() {
		if model[id] != row {
			t.Fatalf("step %d: all yields %q for %q", step, row, id)
		}
		n++
	}
	if n != len(model) {
		t.Fatalf("step %d: all yields %d rows, model %d", step, n, len(model))
	}
}

// TestRowCellsFor: the size holds n rows at most 3/4 full and is the
// smallest power of two that does.
func TestRowCellsFor(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 16}, {12, 16}, {13, 32}, {24, 32}, {25, 64}, {786432, 1 << 20}, {786433, 1 << 21}, {1000000, 1 << 21},
	} {
		if got := rowCellsFor(tc.n); got != tc.want {
			t.Errorf("rowCellsFor(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestRowStoreFillNew: a bulk fill, below and above the size where it
// places rows by ranges of home cells, into an empty table and one that
// holds rows already, leaves a table whose invariants hold, with the
// cells in use that inserting the rows one by one leaves (with linear
// probing they do not depend on the order), and which later inserts,
// replacements and deletions keep right.
func TestRowStoreFillNew(t *testing.T) {
	for _, tc := range []struct {
		name      string
		before, n int
	}{
		{"small", 0, 100},
		{"ranges", 0, 20_000},
		{"ranges onto rows", 3_000, 20_000},
		{"ranges, table grows", 20_000, 40_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 3))
			row := func(i int) string { return idPivot(fmt.Sprintf("id-%07d", i)) + "\x10\x01" }
			got, want := newRowStore(tc.before), newRowStore(tc.before)
			model := map[string]string{}
			for i := range tc.before {
				got.insert(rowID(row(i)), row(i))
				want.insert(rowID(row(i)), row(i))
				model[rowID(row(i))] = row(i)
			}
			var rows []string
			for i := tc.before; i < tc.before+tc.n; i++ {
				rows = append(rows, row(i))
				want.insert(rowID(row(i)), row(i))
				model[rowID(row(i))] = row(i)
			}
			got.fillNew(rows)
			checkRowStore(t, &got, model, 0)
			if len(got.cells) != len(want.cells) {
				t.Fatalf("%d cells, one by one %d", len(got.cells), len(want.cells))
			}
			for i := range got.cells {
				if (got.cells[i] == "") != (want.cells[i] == "") {
					t.Fatalf("cell %d in use: %v, one by one %v", i, got.cells[i] != "", want.cells[i] != "")
				}
			}
			for step := range 3_000 {
				id := rowID(row(rng.IntN(tc.before + tc.n + 500)))
				if rng.IntN(2) == 0 {
					got.del(id)
					delete(model, id)
				} else {
					r := idPivot(id) + "\x10\x02"
					got.insert(id, r)
					model[id] = r
				}
				if step%500 == 0 {
					checkRowStore(t, &got, model, step)
				}
			}
			checkRowStore(t, &got, model, 3_000)
		})
	}
}
