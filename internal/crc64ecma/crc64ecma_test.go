package crc64ecma

import (
	"bytes"
	"hash/crc64"
	"math/rand/v2"
	"strconv"
	"testing"
)

var stdTable = crc64.MakeTable(crc64.ECMA)

// randomBytes returns n bytes of a seeded generator.
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestUpdateMatchesStdlib: every length up to a few folding rounds, some
// long ones, at every alignment of the first byte, from random running
// checksums: the same as hash/crc64. A wrong key, a block dropped or
// folded twice, a wrong tail length all change the checksum.
func TestUpdateMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := randomBytes(rng, 1<<16+64)
	lengths := []int{1 << 16, 1<<16 - 1, 1<<16 + 17, 4096 + 15}
	for n := range 600 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for off := range 16 {
			p := buf[off : off+n]
			crc := rng.Uint64()
			if got, want := Update(crc, p), crc64.Update(crc, stdTable, p); got != want {
				t.Fatalf("Update(%#x, %d bytes at offset %d) = %#x, hash/crc64 gives %#x", crc, n, off, got, want)
			}
		}
	}
	if !haveFold {
		t.Logf("this CPU has no PCLMULQDQ (or the purego tag is set): only the table path was checked")
	}
}

// TestDigestMatchesStdlib: a digest fed in random pieces gives
// hash/crc64's Sum64 and Sum bytes, and Reset starts over.
func TestDigestMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := randomBytes(rng, 200_000)
	for round := range 20 {
		got, want := New(), crc64.New(stdTable)
		for p := data[:rng.IntN(len(data))]; len(p) > 0; {
			k := min(len(p), rng.IntN(3000))
			got.Write(p[:k])
			want.Write(p[:k])
			p = p[k:]
		}
		if got.Sum64() != want.Sum64() || !bytes.Equal(got.Sum([]byte("x")), want.Sum([]byte("x"))) {
			t.Fatalf("round %d: Sum64 %#x, Sum %x; hash/crc64 %#x, %x", round, got.Sum64(), got.Sum(nil), want.Sum64(), want.Sum(nil))
		}
		got.Reset()
		if got.Sum64() != 0 || got.Size() != crc64.Size || got.BlockSize() != 1 {
			t.Fatalf("after Reset: Sum64 %#x, Size %d, BlockSize %d", got.Sum64(), got.Size(), got.BlockSize())
		}
	}
}

// TestChecksumKnown pins one checksum (450 bytes, so both paths run), as
// hash/crc64 computed it when this was written: a change that moved both
// would still be noticed.
func TestChecksumKnown(t *testing.T) {
	in := bytes.Repeat([]byte("The quick brown fox jumps over the lazy dog. "), 10)
	const want = 0x6acf4fb911b2619e
	if got, std := Checksum(in), crc64.Checksum(in, stdTable); got != want || std != want {
		t.Fatalf("Checksum = %#x, hash/crc64 %#x, want %#x", got, std, want)
	}
}

func FuzzUpdate(f *testing.F) {
	f.Add(uint64(0), []byte(""))
	f.Add(uint64(1), bytes.Repeat([]byte{0xff}, 64))
	f.Add(^uint64(0), bytes.Repeat([]byte("ledgerd"), 40))
	f.Fuzz(func(t *testing.T, crc uint64, p []byte) {
		if got, want := Update(crc, p), crc64.Update(crc, stdTable, p); got != want {
			t.Fatalf("Update(%#x, %x) = %#x, hash/crc64 gives %#x", crc, p, got, want)
		}
	})
}

// BenchmarkUpdate compares hash/crc64 and this package side by side.
func BenchmarkUpdate(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{64, 4 << 10, 1 << 20} {
		p := randomBytes(rng, n)
		b.Run("impl=stdlib/bytes="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc64.Update(0, stdTable, p)
			}
		})
		b.Run("impl=fold/bytes="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Update(0, p)
			}
		})
	}
}
