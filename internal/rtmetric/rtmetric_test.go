package rtmetric

import "testing"

var sink []byte

// TestUint64: a cumulative metric grows by at least what is allocated
// between two reads; a name the runtime does not have reads 0.
func TestUint64(t *testing.T) {
	const name = "/gc/heap/allocs:bytes"
	before := Uint64(name)
	sink = make([]byte, 1<<20)
	if after := Uint64(name); after < before+1<<20 {
		t.Fatalf("%s: %d after allocating 1 MiB, was %d", name, after, before)
	}
	sink = nil
	if got := Uint64("/no/such:metric"); got != 0 {
		t.Fatalf("unknown metric reads %d, want 0", got)
	}
}
