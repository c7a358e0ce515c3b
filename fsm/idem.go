package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/idhash"
	"github.com/ledgerd/ledgerd/internal/rangesort"
	"google.golang.org/protobuf/encoding/protowire"
)

// idemMismatch returns the answer to an entry whose (owner, key) is
// remembered with the first result first when the two fingerprints
// differ: INVALID on idempotency_key, naming the key. Either fingerprint
// missing (an entry of version < 3, or a first result stored before
// fingerprints existed) counts as a match, as before.
func idemMismatch(key string, fp []byte, first *fsmv1.Result) *fsmv1.Result {
	if len(fp) == 0 || len(first.GetFingerprint()) == 0 || bytes.Equal(fp, first.GetFingerprint()) {
		return nil
	}
	return invalid("idempotency_key", fmt.Sprintf("key %q was used for a different request (first applied at version %d); a retry must send the same request, a new request needs a new key", key, first.GetVersion()))
}

// idemStore holds the remembered idempotency keys: for each (owner, key),
// the log time it was first seen and the deterministic encoding of its
// first Result (the bytes the client received).
//
// Layout, chosen for memory at millions of keys: records are appended in
// apply order (so also in log time order) to a chunked byte log, each in
// the bytes a snapshot holds for it: the tag of the snapshot's
// idempotency field, the length, and the IdempotencyRecord
// (appendIdemRecord: owner, key and at when not empty or zero, then the
// result). So a snapshot's idempotency records are the log's live bytes
// as they stand (writeSnapshotIdem emits them without encoding anything),
// at about 7 bytes per key more than a layout of lengths alone.
//
// and an open-addressing hash table (linear probing, at most three
// quarters full) maps (owner, key) to a record's position, with the low
// 32 bits of the hash per cell: a probe rarely reads a record that is not
// the one sought, and a deletion finds where a later member of its probe
// run belongs (its home cell) without reading that member's record, a
// cache miss at a quarter million keys. A key costs its record bytes plus
// 4/3 to 8 index cells of 12 bytes (the index is kept between an eighth
// and three quarters full: grow, shrink), 16 to 32 bytes right after a
// restore: no per-key allocation, map entry, string header or slice
// header. Three quarters rather than half: at 1.3M keys after a bulk load
// the index is 24 MB instead of 48, for probe runs that stay within a
// cache line or two of 8-byte cells. The oldest records are pruned from
// the front, and a chunk is dropped once every record in it is pruned.
//
// Records are never changed once written and chunks never move, so a
// view (a snapshot's copy of the chunk headers) stays valid while
// records are appended and pruned; only the index changes in place.
//
// A chunk that is full (sealed) is kept packed: its bytes compressed (see
// idem_pack.go), about half their size on the records of a bulk load. A
// restore packs its chunks in stages of its own (idem_restore.go); a
// store loaded otherwise has them packed a few at a time by later seals.
// Reading a record of a packed chunk unpacks the whole chunk once; that
// happens only for a retried key, a rare hash-tag collision, or the
// oldest chunk as it is pruned, never on the path of a new key.
// Nothing here depends on map order: the hash is a fixed function of the
// bytes, and iteration follows the log.
type idemStore struct {
	// chunks holds the live chunks; chunks[i] has sequence number
	// first+i. Only the last one is appended to, and all but the last
	// are packed unless packing did not pay.
	chunks []idemSeg
	first  uint32
	// front is the offset of the oldest live record in chunks[0].
	front int
	// unpackedFront and unpacked are the oldest chunk and the last
	// other packed chunk read, unpacked (see chunkAt).
	unpackedFront, unpacked unpackedChunk
	// packBuf is the scratch space of pack. While lazy is set (load),
	// sealed chunks are left raw; backlog is the first chunk index at or
	// after which such chunks may remain (see seal).
	packBuf []byte
	lazy    bool
	backlog int
	// index holds pos+1 per cell (0: empty), pos = seq<<32 | offset;
	// tags holds the low 32 bits of the hash of the cell's key (so its
	// home cell, while the index has at most 1<<32 cells).
	index []uint64
	tags  []uint32
	n     int
}

// idemChunk is the size of a chunk of records; a record larger than that
// gets a chunk of its own size.
const idemChunk = 256 << 10

// idemRecord is one record as read from the log; its slices alias the
// chunk.
type idemRecord struct {
	at                 int64
	owner, key, result []byte
}

// idemHash is the hash of a record's owner and key (idhash), with a
// separator between them.
func idemHash[T string | []byte](owner, key T) uint64 {
	return idhash.Finish(idhash.Add(idhash.AddByte(idhash.Add(idhash.Offset, owner), 0xff), key))
}

// len returns the number of remembered keys.
func (s *idemStore) len() int { return s.n }

// chunkAt returns the bytes of the chunk with sequence number seq,
// unpacking a packed chunk. The bytes of an unpacked chunk are a new
// array each time it is unpacked, so records read earlier stay valid.
// Two are kept for the next reads: the oldest chunk's, which pruning
// reads record by record at every keyed write once the store is full,
// and the last other one read (a retried key's), so that neither evicts
// the other.
func (s *idemStore) chunkAt(seq uint32) []byte {
	c := &s.chunks[seq-s.first]
	if c.z == nil {
		return c.raw
	}
	keep := &s.unpacked
	if seq == s.first {
		keep = &s.unpackedFront
	}
	if keep.b != nil && keep.seq == seq {
		return keep.b
	}
	*keep = unpackedChunk{seq: seq, b: c.unpack(nil)}
	return keep.b
}

// record reads the record at pos.
func (s *idemStore) record(pos uint64) idemRecord {
	r, _ := readIdemRecord(s.chunkAt(uint32(pos >> 32))[uint32(pos):])
	return r
}

// readIdemRecord reads the record at the start of b and returns it and
// its length. The bytes were written by appendRecord: the field's tag
// (one byte), the IdempotencyRecord's length, its fields in order.
func readIdemRecord(b []byte) (idemRecord, int) {
	var r idemRecord
	l, n := binary.Uvarint(b[1:])
	i := 1 + n
	end := i + int(l)
	field := func() []byte {
		l, n := binary.Uvarint(b[i+1:])
		i += 1 + n
		v := b[i : i+int(l) : i+int(l)]
		i += int(l)
		return v
	}
	if b[i] == idemOwnerTag {
		r.owner = field()
	}
	if b[i] == idemKeyTag {
		r.key = field()
	}
	if b[i] == idemAtTag {
		at, n := binary.Uvarint(b[i+1:])
		r.at = int64(at)
		i += 1 + n
	}
	r.result = field()
	return r, end
}

// The tags of a record's fields and of the snapshot's field that holds
// each record, one byte each (the field numbers are below 16): written by
// appendIdemRecord and frame, read by readIdemRecord, idemEncoded and
// decodeIdemPersisted.
const (
	idemOwnerTag  = 1<<3 | byte(protowire.BytesType)
	idemKeyTag    = 2<<3 | byte(protowire.BytesType)
	idemAtTag     = 3<<3 | byte(protowire.VarintType)
	idemResultTag = 4<<3 | byte(protowire.BytesType)
	idemRecordTag = snapshotIdemField<<3 | byte(protowire.BytesType)
)

// get returns the stored result of (owner, key); the bytes alias the
// store and must not be changed.
func (s *idemStore) get(owner, key string) ([]byte, bool) {
	r, ok := idemFind(s, owner, key)
	return r.result, ok
}

// idemFind returns the record of (owner, key).
func idemFind[T string | []byte](s *idemStore, owner, key T) (idemRecord, bool) {
	if s.n == 0 {
		return idemRecord{}, false
	}
	mask := uint64(len(s.index) - 1)
	h := idemHash(owner, key)
	for i := h & mask; ; i = (i + 1) & mask {
		c := s.index[i]
		if c == 0 {
			return idemRecord{}, false
		}
		if s.tags[i] != uint32(h) {
			continue
		}
		if r := s.record(c - 1); string(r.owner) == string(owner) && string(r.key) == string(key) {
			return r, true
		}
	}
}

// add appends a record for (owner, key) unless the key is stored
// already; it reports whether it did.
func (s *idemStore) add(owner, key []byte, at int64, result []byte) bool {
	s.grow(1)
	// One probe both looks for the key and finds its cell: with no
	// tombstones, a missing key belongs in the first empty cell of its
	// probe sequence.
	h := idemHash(owner, key)
	mask := uint64(len(s.index) - 1)
	i := h & mask
	for ; s.index[i] != 0; i = (i + 1) & mask {
		if s.tags[i] != uint32(h) {
			continue
		}
		if r := s.record(s.index[i] - 1); string(r.owner) == string(owner) && string(r.key) == string(key) {
			return false
		}
	}
	s.index[i], s.tags[i] = s.appendRecord(owner, key, at, result)+1, uint32(h)
	s.n++
	return true
}

// appendRecord appends a record to the log (not to the index) and
// returns its position.
func (s *idemStore) appendRecord(owner, key []byte, at int64, result []byte) uint64 {
	e := idemRecord{at: at, owner: owner, key: key, result: result}
	last, c, pos := s.frame(idemRecordSize(e))
	s.chunks[last].raw = appendIdemRecord(c, e)
	return pos
}

// appendEncoded appends a record given as appendIdemRecord encodes it
// (idemEncoded) to the log and returns its position.
func (s *idemStore) appendEncoded(rec []byte) uint64 {
	last, c, pos := s.frame(len(rec))
	s.chunks[last].raw = append(c, rec...)
	return pos
}

// idemFits reports whether a record of size bytes goes into a chunk with
// free bytes of room left, or starts a new one of idemRoom(size): the rule
// frame appends by and planIdemChunks lays a snapshot's records out by.
func idemFits(free, size int) bool { return free >= 1+binary.MaxVarintLen64+size }

// idemRoom is the capacity of a new chunk whose first record has size
// bytes: idemChunk, or the record's own size when it is larger.
func idemRoom(size int) int { return max(idemChunk, 1+binary.MaxVarintLen64+size) }

// frame starts a record of size bytes: it returns the chunk the record
// goes to (a new one if the last lacks the room, the last one then
// sealed and packed) with the record's tag and length appended, for the
// caller to append the record and store back at chunks[last].raw, and
// the position the record will have.
func (s *idemStore) frame(size int) (last int, c []byte, pos uint64) {
	last = len(s.chunks) - 1
	if last < 0 || !idemFits(cap(s.chunks[last].raw)-len(s.chunks[last].raw), size) {
		if last >= 0 {
			s.seal(last)
		}
		s.chunks = append(s.chunks, idemSeg{raw: make([]byte, 0, idemRoom(size))})
		last++
	}
	c = s.chunks[last].raw
	pos = uint64(s.first+uint32(last))<<32 | uint64(len(c))
	c = append(c, idemRecordTag)
	return last, binary.AppendUvarint(c, uint64(size)), pos
}

// idemEncoded reports whether b is exactly appendIdemRecord's encoding
// of e, where e was decoded from b: the same size, and each of e's
// fields' tag and length where that encoding puts them (fields in
// another order, a repeated or unknown field, or an overlong length
// fail one or the other). Any decoder reads a field's bytes where they
// stand, so e's values are then those bytes. It reads only the fields'
// headers.
func idemEncoded(b []byte, e idemRecord) bool {
	if len(b) != idemRecordSize(e) {
		return false
	}
	i := 0
	field := func(tag byte, v []byte) bool {
		if i >= len(b) || b[i] != tag {
			return false
		}
		l, n := binary.Uvarint(b[i+1:])
		if n <= 0 || l != uint64(len(v)) {
			return false
		}
		i += 1 + n + len(v)
		return i <= len(b)
	}
	if len(e.owner) > 0 && !field(idemOwnerTag, e.owner) || len(e.key) > 0 && !field(idemKeyTag, e.key) {
		return false
	}
	if e.at != 0 {
		if i >= len(b) || b[i] != idemAtTag {
			return false
		}
		at, n := binary.Uvarint(b[i+1:])
		if n <= 0 || int64(at) != e.at {
			return false
		}
		i += 1 + n
	}
	return field(idemResultTag, e.result) && i == len(b)
}

// idemRecordSize is the length of appendIdemRecord's encoding of e.
func idemRecordSize(e idemRecord) int {
	n := 1 + protowire.SizeBytes(len(e.result))
	if len(e.owner) > 0 {
		n += 1 + protowire.SizeBytes(len(e.owner))
	}
	if len(e.key) > 0 {
		n += 1 + protowire.SizeBytes(len(e.key))
	}
	if e.at != 0 {
		n += 1 + protowire.SizeVarint(uint64(e.at))
	}
	return n
}

// idemLoadBuckets is log2 of the number of home-cell ranges load sorts
// the records into before it indexes them: 4,096 ranges, so that the
// index cells and tags of one range (at a million keys: 1,024 cells,
// 12 KiB) stay in cache while its records are placed.
const idemLoadBuckets = rangesort.Bits

// idemPlace is a record as load indexes it: its hash tag and its
// position, packed (chunk number << idemOffBits | offset).
type idemPlace struct{ tag, pos uint32 }

// idemOffBits is the width of the offset in idemPlace.pos: a chunk of
// idemChunk bytes (a larger record starts its own chunk).
const idemOffBits = 18

// load appends the records raw (encoded IdempotencyRecords, decoded by
// decode) to an empty store whose index was sized for them (grow), as
// adding them one by one in order would, and returns -1 and nil; or the
// index of the first record that a scan in order refuses, for decode's
// error or as a duplicate key, and that error (the records before it are
// then stored).
//
// At a restore the records come by the hundred thousand, and adding them
// one by one put each in a random cell of an index of tens of megabytes:
// a cache miss or two per key, most of the time of the store's build.
// load appends every record to the log first, sorts their positions by
// the range of their home cells (one counting pass) and then places them
// range by range, where the cells they probe are in cache. Which record
// ends in which cell of a probe run depends on the order of placement
// (the cells in use do not); lookups, deletions and snapshots do not
// depend on it, only on the cells' contents being a valid table. A
// duplicate key, found while placing, sends the whole index to be built
// again in log order, which finds the first duplicate in log order.
func (s *idemStore) load(raw fieldList, decode func([]byte) (idemRecord, error)) (int, error) {
	i, _, err := s.loadPlanned(raw, decode, nil)
	return i, err
}

// loadPlanned is load, for records laid out by spans (planIdemChunks,
// nil for none): when every record is stored as the log holds it, the
// chunks alias raw's body instead of copying it, and aliased is true;
// the caller must then replace them (adoptChunks) before the body goes.
func (s *idemStore) loadPlanned(raw fieldList, decode func([]byte) (idemRecord, error), spans []idemSpan) (bad int, aliased bool, badErr error) {
	if s.n != 0 || len(s.chunks) != 0 {
		panic("fsm: idemStore.load on a store in use")
	}
	// The chunks are not packed here but by the caller (a restore's
	// stages) or a few at each chunk the log seals (seal): packing a
	// million keys' chunks in this one pass would lengthen a restore by
	// a quarter of a second or more.
	s.lazy = true
	defer func() { s.lazy = false }()
	// 1. The log, and each record's hash tag and position (packed in 32
	// bits: a chunk's number and the offset in it), in log order.
	recs := make([]idemPlace, 0, raw.len())
	fits := true // every position fits an idemPlace
	bad = -1
	if spans != nil {
		if recs, aliased = s.loadSpans(raw, decode, spans, recs); aliased {
			fits = len(spans) <= 1<<(32-idemOffBits)
		}
	}
	if !aliased {
		for i := range raw.len() {
			b := raw.get(i)
			e, err := decode(b)
			if err != nil {
				bad, badErr = i, err
				break
			}
			var pos uint64
			if idemEncoded(b, e) {
				// A record as Persist wrote it: its bytes are the log's.
				pos = s.appendEncoded(b)
			} else {
				pos = s.appendRecord(e.owner, e.key, e.at, e.result)
			}
			chunk, off := pos>>32-uint64(s.first), uint32(pos)
			fits = fits && chunk < 1<<(32-idemOffBits) && off < 1<<idemOffBits
			recs = append(recs, idemPlace{tag: uint32(idemHash(e.owner, e.key)), pos: uint32(chunk)<<idemOffBits | off})
		}
	}
	n := len(recs)
	s.grow(n)
	if !fits || len(s.index) > math.MaxUint32+1 {
		// A position past the packed range (an offset past a chunk of
		// idemChunk bytes, in the room left after a larger record, or a
		// log of gigabytes), or tags that no longer give the home cell
		// (2^31 keys): indexed in order, as add does.
		bad, badErr = s.indexInOrder(n, bad, badErr)
		return bad, aliased, badErr
	}
	// 2. The records sorted by the range of their home cells.
	mask := uint32(len(s.index) - 1)
	shift := bits.Len32(mask) - min(idemLoadBuckets, bits.Len32(mask))
	rangesort.Sort(recs, func(p idemPlace) uint32 { return (p.tag & mask) >> shift })
	// 3. The index, range by range.
	for _, p := range recs {
		pos := uint64(s.first+p.pos>>idemOffBits)<<32 | uint64(p.pos&(1<<idemOffBits-1))
		// The tag is the hash's low half, which gives the home cell too.
		i, dup := s.slotFor(uint64(p.tag), pos)
		if dup {
			clear(s.index)
			clear(s.tags)
			bad, badErr = s.indexInOrder(n, bad, badErr)
			return bad, aliased, badErr
		}
		s.index[i], s.tags[i] = pos+1, p.tag
	}
	s.n = n
	return bad, aliased, badErr
}

// indexInOrder indexes the first n records of the log (the index is
// empty and sized for them) in log order, as add does; it returns the
// index of the first duplicate key and its error, or bad and badErr.
func (s *idemStore) indexInOrder(n, bad int, badErr error) (int, error) {
	dup := -1
	s.eachPos(n, func(i int, pos uint64) {
		if dup >= 0 {
			return
		}
		r := s.record(pos)
		h := idemHash(r.owner, r.key)
		k, found := s.slotFor(h, pos)
		if found {
			dup = i
			return
		}
		s.index[k], s.tags[k] = pos+1, uint32(h)
		s.n++
	})
	if dup >= 0 {
		return dup, errors.New("duplicate key")
	}
	return bad, badErr
}

// slotFor probes the index from the home cell of hash h for the record
// at pos, which is in the log but not yet in the index: it returns the
// first empty cell, or the cell of a record with the same owner and key
// (dup).
func (s *idemStore) slotFor(h, pos uint64) (cell uint64, dup bool) {
	mask := uint64(len(s.index) - 1)
	i := h & mask
	for ; s.index[i] != 0; i = (i + 1) & mask {
		if s.tags[i] == uint32(h) && s.sameKey(s.index[i]-1, pos) {
			return i, true
		}
	}
	return i, false
}

// sameKey reports whether the records at a and b have the same owner and
// key.
func (s *idemStore) sameKey(a, b uint64) bool {
	ra, rb := s.record(a), s.record(b)
	return string(ra.owner) == string(rb.owner) && string(ra.key) == string(rb.key)
}

// eachPos calls f with the number and position of each of the first n
// records of the log, in order.
func (s *idemStore) eachPos(n int, f func(i int, pos uint64)) {
	i := 0
	for k := range s.chunks {
		seq := s.first + uint32(k)
		c := s.chunkAt(seq)
		for off := 0; off < len(c) && i < n; i++ {
			_, l := readIdemRecord(c[off:])
			f(i, uint64(seq)<<32|uint64(off))
			off += l
		}
	}
}

// place puts pos in the first empty cell of the probe sequence of h.
func (s *idemStore) place(pos, h uint64) {
	mask := uint64(len(s.index) - 1)
	i := h & mask
	for s.index[i] != 0 {
		i = (i + 1) & mask
	}
	s.index[i] = pos + 1
	s.tags[i] = uint32(h)
}

// grow sizes the index for n more keys (at most three quarters full),
// rebuilding it once rather than doubling it step by step.
func (s *idemStore) grow(n int) {
	size := max(64, len(s.index))
	for (s.n+n)*4 > size*3 {
		size *= 2
	}
	if size == len(s.index) {
		return
	}
	s.rehash(size)
}

// prune forgets the oldest records, those at least window older than
// now.
func (s *idemStore) prune(now, window int64) {
	s.dropWhile(func(r idemRecord) bool { return now-r.at >= window })
}

// trim forgets the oldest records until at most maxKeys are left.
func (s *idemStore) trim(maxKeys int) {
	if s.n <= maxKeys {
		// Nothing to drop: not even the oldest record need be read.
		return
	}
	s.dropWhile(func(idemRecord) bool { return s.n > maxKeys })
}

// trimKeeping forgets the oldest records until at most maxKeys are
// left, but none younger than minAge at log time now: those may belong
// to requests whose clients are still retrying.
func (s *idemStore) trimKeeping(maxKeys int, now, minAge int64) {
	if s.n <= maxKeys {
		// Nothing to drop (the usual case of the call before a new key
		// is added): not even the oldest record need be read.
		return
	}
	s.dropWhile(func(r idemRecord) bool { return s.n > maxKeys && now-r.at >= minAge })
}

// dropWhile forgets records from the oldest on for as long as drop says
// so.
func (s *idemStore) dropWhile(drop func(idemRecord) bool) {
	for s.n > 0 {
		if s.front == s.chunks[0].size() {
			// Every record of the first chunk is gone; it is not the last
			// chunk, since a record is left.
			s.chunks[0] = idemSeg{}
			s.chunks = s.chunks[1:]
			s.backlog = max(s.backlog-1, 0)
			s.unpackedFront = unpackedChunk{}
			if s.unpacked.seq == s.first {
				s.unpacked = unpackedChunk{}
			}
			s.first++
			s.front = 0
		}
		r, l := readIdemRecord(s.chunkAt(s.first)[s.front:])
		if !drop(r) {
			s.shrink()
			return
		}
		s.unindex(uint64(s.first)<<32|uint64(s.front), idemHash(r.owner, r.key))
		s.front += l
		s.n--
	}
	if len(s.chunks) > 1 || s.front > 0 {
		// All pruned: keep only the last chunk's unused room.
		last := s.chunks[len(s.chunks)-1].raw
		s.first += uint32(len(s.chunks) - 1)
		s.chunks = []idemSeg{{raw: last[len(last):len(last):cap(last)]}}
		s.front = 0
		s.backlog = 0
		s.unpacked, s.unpackedFront = unpackedChunk{}, unpackedChunk{}
	}
	s.shrink()
}

// shrink rebuilds the index at a quarter to a half full once it is less
// than an eighth full. A restore sizes the index for every record of the
// snapshot, which a burst of writes can leave at several times the cap
// (young keys outlive it); without this, the index sized for the burst
// (50 MB at 1.1M keys) stayed after the cap had trimmed the records to a
// quarter of that. Between a quarter and a half full, neither a growth
// (past three quarters) nor a shrink follows soon after the other.
func (s *idemStore) shrink() {
	if len(s.index) <= 64 || s.n*8 >= len(s.index) {
		return
	}
	size := 64
	for s.n*2 > size {
		size *= 2
	}
	s.rehash(size)
}

// rehash moves the index into one of size cells. The cells' tags give
// their home cells (the tag is the hash's low half), so records are read
// only in an index of more than 1<<32 cells: rehashing does not unpack
// chunks.
func (s *idemStore) rehash(size int) {
	old, oldTags := s.index, s.tags
	s.index, s.tags = probeCells[uint64](size), probeCells[uint32](size)
	for i, c := range old {
		if c == 0 {
			continue
		}
		h := uint64(oldTags[i])
		if size > math.MaxUint32+1 {
			r := s.record(c - 1)
			h = idemHash(r.owner, r.key)
		}
		s.place(c-1, h)
	}
}

// unindex deletes the cell holding pos (whose hash is h), shifting later
// members of its probe run back so that no tombstones accumulate.
func (s *idemStore) unindex(pos, h uint64) {
	mask := uint64(len(s.index) - 1)
	i := h & mask
	for s.index[i] != pos+1 {
		i = (i + 1) & mask
	}
	for j := i; ; {
		s.index[i] = 0
		for {
			j = (j + 1) & mask
			c := s.index[j]
			if c == 0 {
				return
			}
			// The member's home cell, from its tag.
			k := uint64(s.tags[j]) & mask
			if mask > math.MaxUint32 {
				r := s.record(c - 1)
				k = idemHash(r.owner, r.key) & mask
			}
			// (Checked where the record is at hand without unpacking a
			// chunk: these reads go to random chunks, and tests check
			// every tag against its key after each step anyway.)
			if verifyCodec && s.chunks[uint32((c-1)>>32)-s.first].z == nil {
				if r := s.record(c - 1); idemHash(r.owner, r.key)&mask != k {
					panic(fmt.Sprintf("fsm: idempotency index cell %d: tag %#x is not its key's hash", j, s.tags[j]))
				}
			}
			if !idhash.Movable(i, j, k, mask) {
				continue
			}
			s.index[i], s.tags[i] = c, s.tags[j]
			i = j
			break
		}
	}
}

// view returns the records as they stand, for a snapshot: later appends
// and prunes do not change it.
func (s *idemStore) view() idemView {
	v := idemView{chunks: make([]idemSeg, len(s.chunks)), front: s.front}
	for i, c := range s.chunks {
		c.raw = c.raw[:len(c.raw):len(c.raw)]
		v.chunks[i] = c
	}
	return v
}

// idemView is a fixed list of idempotency records in apply order: the
// log's chunks as they stood, which Persist writes as they are
// (eachChunk).
type idemView struct {
	chunks []idemSeg
	// front is the offset of the first record in chunks[0].
	front int
}
