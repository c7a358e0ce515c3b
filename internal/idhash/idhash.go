// Package idhash is what the ledger's open-addressing tables (the
// planner's booking table, the fsm's reservation rows and idempotency
// records) share: the fixed hash they probe by, FNV-1a over the bytes
// followed by a 64-bit finaliser that spreads every input bit over the
// low bits a table uses to pick a cell, and the rule of their deletion
// by backward shift (Movable).
//
// It must stay a fixed function of its input (no seed): a table's layout
// then follows from the sequence of its calls alone, on every replica.
// It imports nothing, so that the planner, which may use the standard
// library only, can use it (planner/deps_test.go).
package idhash

// Offset is the FNV-1a offset basis: the hash of no bytes, before Finish.
const Offset uint64 = 14695981039346656037

// prime is the 64-bit FNV prime.
const prime uint64 = 1099511628211

// Add folds the bytes of s into the running hash h (FNV-1a).
func Add[T string | []byte](h uint64, s T) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// AddByte folds one byte into the running hash h, e.g. a separator
// between two fields.
func AddByte(h uint64, b byte) uint64 {
	return (h ^ uint64(b)) * prime
}

// Finish returns the final hash of the running hash h.
func Finish(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// String returns the hash of s.
func String[T string | []byte](s T) uint64 { return Finish(Add(Offset, s)) }

// Movable reports whether, in a linear-probing table of mask+1 cells
// (mask+1 a power of two), the entry in cell at, whose home cell is home,
// may move back into the hole at cell hole, which comes before at in its
// probe run. Deletion by backward shift moves each later entry of the run
// into the hole unless its home lies cyclically in (hole, at]: there the
// move would put it before its home, out of its own probe sequence.
func Movable(hole, at, home, mask uint64) bool {
	return (at-home)&mask >= (at-hole)&mask
}
