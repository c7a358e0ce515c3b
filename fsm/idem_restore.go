package fsm

import (
	"bytes"
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
)

// Restoring the idempotency log packed, without copying it first.
//
// A snapshot written by this node holds the log's records one after the
// other, each framed as the log frames it (the field's one-byte tag and
// a minimal length). So the chunks load would append them to are runs of
// the snapshot's bytes, known before any record is decoded (frame's rule
// needs only their sizes). A restore then packs those runs in stages of
// their own, beside the others of its first call, straight from the
// snapshot; the store's build indexes the records in place (its chunks
// alias the snapshot meanwhile) and the packed chunks replace them before
// the snapshot's bytes are dropped. Copying the records into raw chunks
// first and packing them later left a copy of the whole log (about 200
// MB at a million keys) as garbage at the restore's peak; packing in the
// build's one sequential pass lengthened the restore by a quarter of a
// second or more.

// idemSpan is one chunk of the log as load would fill it from a
// snapshot: records [first, first+count), whose framed bytes are
// body[at:at+size], in a chunk of capacity room.
type idemSpan struct {
	first, count   int
	at, size, room int
}

// planIdemChunks lays the records of raw out in chunks as load would
// append them, on the assumption that every record is framed in the body
// as the log frames it (a one-byte tag, a minimal length) and follows
// the one before: then a record's framed length is the distance to the
// next record's offset, and its size follows from that. It reads only
// the offsets (a restore runs it before its stages start, so it must be
// quick); loadSpans checks the assumption record by record, and load
// appends the records as before where it fails. It returns nil when the
// offsets alone already contradict it.
func planIdemChunks(raw fieldList) []idemSpan {
	n := raw.len()
	if n == 0 {
		return nil
	}
	var spans []idemSpan
	for i := range n {
		at := raw.at(i)
		framed := 0
		if i+1 < n {
			framed = raw.at(i+1) - at
		} else {
			framed = raw.fieldLen(i)
		}
		size, ok := framedSize(framed)
		if !ok {
			return nil
		}
		if len(spans) == 0 || !idemFits(spans[len(spans)-1].room-spans[len(spans)-1].size, size) {
			spans = append(spans, idemSpan{first: i, at: at, room: idemRoom(size)})
		}
		sp := &spans[len(spans)-1]
		sp.count++
		sp.size += framed
	}
	return spans
}

// framedSize returns the size of a record whose field, framed as the log
// frames it, is framed bytes long; false if no size gives that length.
func framedSize(framed int) (int, bool) {
	for k := 1; k <= binary.MaxVarintLen64; k++ {
		if size := framed - 1 - k; size >= 0 && protowire.SizeVarint(uint64(size)) == k {
			return size, true
		}
	}
	return 0, false
}

// loadSpans is load's first step for records laid out by spans: each
// record's hash tag and position as load appends them, with the store's
// chunks aliasing the snapshot's bytes (the caller replaces them with
// copies, adoptChunks, before those bytes go). It returns false, leaving
// the store empty, at the first record that does not decode, is not
// stored as the log holds it, or is not framed and placed as spans
// assumed: load then appends them all as before.
func (s *idemStore) loadSpans(raw fieldList, decode func([]byte) (idemRecord, error), spans []idemSpan, recs []idemPlace) ([]idemPlace, bool) {
	for k, sp := range spans {
		off := 0
		for i := sp.first; i < sp.first+sp.count; i++ {
			b := raw.get(i)
			e, err := decode(b)
			if err != nil || !idemEncoded(b, e) {
				return recs[:0], false
			}
			recs = append(recs, idemPlace{tag: uint32(idemHash(e.owner, e.key)), pos: uint32(k)<<idemOffBits | uint32(off)})
			off += 1 + protowire.SizeBytes(len(b))
		}
		// Each record's framed length as the log frames it is at most
		// the distance to the next record's offset, which the plan took
		// as its length: the sums agree only if every record is framed
		// so and no gap lies between two.
		if off != sp.size {
			return recs[:0], false
		}
	}
	s.chunks = make([]idemSeg, len(spans))
	for k, sp := range spans {
		s.chunks[k].raw = raw.body[sp.at : sp.at+sp.size : sp.at+sp.size]
	}
	return recs, true
}

// packSpans fills share k of stages of out (every stages-th chunk from
// the k-th) with the chunks spans lays out of body: sealed chunks packed
// (or copied, when packing does not pay), the last one copied into a
// buffer with its room to grow. Each stage writes its own entries of out.
func packSpans(body []byte, spans []idemSpan, out []idemSeg, k, stages int) {
	var buf []byte
	for i := k; i < len(spans); i += stages {
		sp := spans[i]
		src := body[sp.at : sp.at+sp.size]
		if i == len(spans)-1 {
			out[i].raw = append(make([]byte, 0, sp.room), src...)
			continue
		}
		out[i] = idemSeg{raw: src}
		if buf = out[i].pack(buf); out[i].z == nil {
			out[i].raw = bytes.Clone(src) // packing did not pay
		}
	}
}

// adoptChunks replaces the chunks loadSpans aliased with the copies
// packSpans made of the same bytes: every sealed one packed, so no
// backlog is left.
func (s *idemStore) adoptChunks(chunks []idemSeg) {
	s.chunks = chunks
	s.unpacked, s.unpackedFront = unpackedChunk{}, unpackedChunk{}
	s.backlog = max(len(chunks)-1, 0)
}
