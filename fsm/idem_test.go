package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// idemModel is the plain reference for idemStore: a map and a log.
type idemModel struct {
	byKey map[[2]string][]byte
	log   []idemModelRec
}

type idemModelRec struct {
	owner, key string
	at         int64
	result     []byte
}

// TestIdemStoreMatchesModel drives the compact store and a map-and-log
// model with the same random adds, lookups, prunes, trims to a count and
// snapshot views
// (results up to several chunks long, so chunks fill, are dropped and
// start over) and checks every answer, the count, and that each view
// still lists exactly the records it was taken with after the store has
// moved on.
func TestIdemStoreMatchesModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x1de))
			var s idemStore
			m := idemModel{byKey: map[[2]string][]byte{}}
			type taken struct {
				v    idemView
				want []idemModelRec
			}
			var views []taken
			now := int64(0)
			for step := range 4000 {
				owner, key := []string{"", "alice", "bob"}[r.IntN(3)], fmt.Sprintf("k%d", r.IntN(3000))
				switch op := r.IntN(20); {
				case op < 12:
					size := r.IntN(64)
					if r.IntN(50) == 0 {
						size = idemChunk + r.IntN(idemChunk)
					}
					res := make([]byte, size)
					for i := range res {
						res[i] = byte(r.Uint32())
					}
					_, dup := m.byKey[[2]string{owner, key}]
					if got := s.add([]byte(owner), []byte(key), now, res); got == dup {
						t.Fatalf("step %d: add %q/%q = %v, want %v", step, owner, key, got, !dup)
					}
					if !dup {
						m.byKey[[2]string{owner, key}] = res
						m.log = append(m.log, idemModelRec{owner, key, now, res})
					}
				case op < 16:
					want, wok := m.byKey[[2]string{owner, key}]
					if got, ok := s.get(owner, key); ok != wok || !bytes.Equal(got, want) {
						t.Fatalf("step %d: get %q/%q = %v, want %v", step, owner, key, ok, wok)
					}
				case op == 16 && r.IntN(4) == 0:
					keep := r.IntN(len(m.log) + 2)
					s.trim(keep)
					if n := len(m.log) - keep; n > 0 {
						for _, e := range m.log[:n] {
							delete(m.byKey, [2]string{e.owner, e.key})
						}
						m.log = m.log[n:]
					}
				case op < 18:
					now += int64(r.IntN(40))
					if r.IntN(8) == 0 {
						now += 1000 // everything goes
					}
					window := int64(100 + r.IntN(200))
					s.prune(now, window)
					n := 0
					for n < len(m.log) && now-m.log[n].at >= window {
						delete(m.byKey, [2]string{m.log[n].owner, m.log[n].key})
						n++
					}
					m.log = m.log[n:]
				default:
					views = append(views, taken{s.view(), slices.Clone(m.log)})
				}
				if s.len() != len(m.log) {
					t.Fatalf("step %d: len %d, want %d", step, s.len(), len(m.log))
				}
			}
			for i, tk := range views {
				var got []idemModelRec
				tk.v.each(func(e idemRecord) {
					got = append(got, idemModelRec{string(e.owner), string(e.key), e.at, e.result})
				})
				if !slices.EqualFunc(got, tk.want, func(a, b idemModelRec) bool {
					return a.owner == b.owner && a.key == b.key && a.at == b.at && bytes.Equal(a.result, b.result)
				}) {
					t.Fatalf("view %d lists %d records, want %d (or they differ)", i, len(got), len(tk.want))
				}
			}
		})
	}
}
