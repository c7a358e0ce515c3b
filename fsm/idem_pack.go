package fsm

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Packed chunks of the idempotency log.
//
// Why: a key's record (owner, key, time and the first result, about 150
// bytes for a one-phase reserve) is kept for at least a minute, so a
// node holds a minute of keyed writes: after a bulk load of a million
// keyed reservations 1.1-1.3M records, about 200 MB, a third of the
// node's heap at a million live reservations. The records of a chunk
// repeat owners, tags, resource names and nearby times, and s2 (the
// Snappy format's faster, denser successor) halves them at about half a
// gigabyte a second: 0.2-0.3 µs per keyed write, once, when the chunk is
// sealed (or, for a restored log, in the restore's own stages:
// idem_restore.go).
//
// Why whole chunks and not records: one record is too small to compress,
// and a chunk is what the log appends, prunes and snapshots anyway.
// Reads of single records from packed chunks are rare (see idemStore),
// and each unpacks the chunk (a fraction of a millisecond). The oldest
// chunk and the last other one unpacked are kept for the next reads
// (chunkAt): pruning reads the oldest record by record, and a rebuild
// in log order reads each chunk once. A snapshot unpacks every chunk as
// it writes it (eachChunk), so the file and its bytes are what they were
// before chunks were packed: nothing here is visible outside the store.

// idemSeg is one chunk of the idempotency log: its records, or once it
// is sealed, their s2 block encoding.
type idemSeg struct {
	// raw is the chunk's bytes, nil once packed.
	raw []byte
	// z is the packed chunk (nil while raw), n its unpacked length.
	z []byte
	n int
}

// size returns the length of the chunk's records.
func (c *idemSeg) size() int {
	if c.z != nil {
		return c.n
	}
	return len(c.raw)
}

// unpack returns the chunk's records, in dst when it has the room. A
// packed chunk that does not unpack to its length means the store's
// memory was corrupted, not that any input was bad: nothing reaches z
// but what idemSeg.pack encoded.
func (c *idemSeg) unpack(dst []byte) []byte {
	if c.z == nil {
		return c.raw
	}
	if cap(dst) < c.n {
		dst = make([]byte, c.n)
	}
	b, err := s2.Decode(dst[:c.n], c.z)
	if err != nil || len(b) != c.n {
		panic(fmt.Sprintf("fsm: packed idempotency chunk of %d bytes unpacks to %d: %v", c.n, len(b), err))
	}
	return b
}

// unpackedChunk is a packed chunk's bytes as chunkAt last unpacked them.
type unpackedChunk struct {
	seq uint32
	b   []byte
}

// packMin is the smallest saving (in eighths of the chunk) that keeps a
// chunk packed: records that do not compress (random results) stay raw,
// and cost no unpacking.
const packMin = 1

// packPerSeal is how many chunks seal packs at most: the one sealed and,
// while load's raw chunks remain, older ones, so that a restored store's
// chunks are packed (or pruned) within a few hundred thousand keyed
// writes without any one write paying for more than a few chunks.
const packPerSeal = 3

// seal packs chunk last, which is full and never appended to again, and
// chunks left raw before it (from backlog on), packPerSeal at most. load
// leaves every chunk raw (lazy): packing a million keys' chunks in its
// one sequential pass would lengthen a restart by a quarter of a second
// or more. A restore packs them in stages of its own (idem_restore.go);
// any other loaded store's chunks are packed as its next chunks are
// sealed.
func (s *idemStore) seal(last int) {
	if s.lazy {
		return
	}
	for k := 0; k < packPerSeal && s.backlog <= last; k++ {
		s.packBuf = s.chunks[s.backlog].pack(s.packBuf)
		s.backlog++
	}
}

// pack packs the chunk, which is sealed, unless it is packed already or
// packing would save less than packMin eighths, using buf as scratch
// space; it returns buf, grown if it was too small. A view may still hold
// the raw buffer, so it is left to the collector.
func (c *idemSeg) pack(buf []byte) []byte {
	if c.z != nil || len(c.raw) == 0 {
		return buf
	}
	raw := c.raw
	z := s2.Encode(buf[:cap(buf)], raw)
	if cap(z) > cap(buf) {
		buf = z[:0]
	}
	if len(z) <= len(raw)-len(raw)*packMin/8 {
		*c = idemSeg{z: bytes.Clone(z), n: len(raw)}
	}
	return buf
}

// eachChunk calls f with the bytes of each chunk of the view in order,
// from the view's first record on: a packed chunk unpacked into a buffer
// that f must not keep past its call.
func (v idemView) eachChunk(f func([]byte) error) error {
	var buf []byte
	for i := range v.chunks {
		c := &v.chunks[i]
		b := c.unpack(buf)
		if c.z != nil {
			buf = b
		}
		if i == 0 {
			b = b[v.front:]
		}
		if err := f(b); err != nil {
			return err
		}
	}
	return nil
}
