package fsm

import (
	"encoding/binary"
	"testing"
)

// TestFieldListChunks: items listed across several chunks, the last one
// partly filled, are all found, in order, with their own bytes.
func TestFieldListChunks(t *testing.T) {
	for _, n := range []int{0, 1, 1 << fieldChunkBits, 3<<fieldChunkBits + 5} {
		raw := make([][]byte, n)
		for i := range raw {
			raw[i] = binary.AppendUvarint(nil, uint64(i))
		}
		l := fieldsOf(raw)
		if l.len() != n {
			t.Fatalf("n=%d: len %d", n, l.len())
		}
		if want := (n + 1<<fieldChunkBits - 1) >> fieldChunkBits; len(l.chunks) != want {
			t.Fatalf("n=%d: %d chunks, want %d", n, len(l.chunks), want)
		}
		for i := range n {
			v, k := binary.Uvarint(l.get(i))
			if k <= 0 || v != uint64(i) || k != len(l.get(i)) {
				t.Fatalf("n=%d: item %d reads %d (%d bytes of %d)", n, i, v, k, len(l.get(i)))
			}
		}
	}
}
