// Package crc64ecma computes the CRC-64 with the ECMA-182 polynomial
// exactly as hash/crc64 does with crc64.MakeTable(crc64.ECMA) (raft's
// snapshot checksum), faster: on amd64 with carry-less multiplication
// (PCLMULQDQ) the bulk of the input is folded 64 bytes at a time, about
// 16 GB/s against hash/crc64's 1.1 GB/s on the machines measured, and the
// last bytes go through hash/crc64's tables. Elsewhere it is hash/crc64.
//
// Why: raft's file snapshot store hashes every snapshot it writes and
// every one it reads; at a million reservations that pass was a third of
// a snapshot's CPU. The result is the same checksum, so snapshots stay
// readable by raft's own store and by earlier releases.
//
// It holds no state beyond a digest's and starts nothing.
package crc64ecma

import (
	"encoding/binary"
	"hash"
	"hash/crc64"
	"math/bits"
)

// Size is the size of the checksum in bytes.
const Size = crc64.Size

// poly is the ECMA-182 polynomial without its x^64 term, most significant
// bit first (crc64.ECMA is the same polynomial bit-reversed).
const poly = 0x42F0E1EBA9EA3693

var table = crc64.MakeTable(crc64.ECMA)

// foldKeys are the folding constants, two per distance: for a 16-byte
// block folded forward by d bits, its first 8 bytes are multiplied by
// x^(d+63) mod P and its last 8 by x^(d-1) mod P (bit-reversed, as the
// input is least significant bit first). d = 512 folds each of four
// blocks onto the block 64 bytes later; d = 128 folds a block onto the
// next one.
var foldKeys = [4]uint64{
	bits.Reverse64(xPowMod(512 + 63)), bits.Reverse64(xPowMod(512 - 1)),
	bits.Reverse64(xPowMod(128 + 63)), bits.Reverse64(xPowMod(128 - 1)),
}

// xPowMod returns x^e mod P, most significant bit first.
func xPowMod(e int) uint64 {
	r := uint64(1)
	for range e {
		carry := r >> 63
		r <<= 1
		if carry == 1 {
			r ^= poly
		}
	}
	return r
}

// minFold is the shortest input the folding path takes: four blocks.
const minFold = 64

// Update returns the result of adding the bytes in p to crc, as
// crc64.Update(crc, crc64.MakeTable(crc64.ECMA), p) does.
func Update(crc uint64, p []byte) uint64 {
	if len(p) >= minFold && haveFold {
		// Folding keeps the input's remainder modulo P (crc's complement
		// xored into the first 8 bytes, as the table loop starts) in
		// one 16-byte block; its CRC from a zero register is the CRC
		// of everything folded.
		n := len(p) &^ 15
		lo, hi := fold(crc, p[:n], &foldKeys)
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], lo)
		binary.LittleEndian.PutUint64(b[8:], hi)
		crc = crc64.Update(^uint64(0), table, b[:])
		p = p[n:]
	}
	return crc64.Update(crc, table, p)
}

// Checksum returns the CRC-64 (ECMA) of data.
func Checksum(data []byte) uint64 { return Update(0, data) }

// New returns a hash.Hash64 computing the CRC-64 (ECMA), as
// crc64.New(crc64.MakeTable(crc64.ECMA)) does; its Sum appends the
// checksum big-endian, as that one's does.
func New() hash.Hash64 { return new(digest) }

// digest is a running checksum.
type digest struct{ crc uint64 }

func (d *digest) Size() int      { return Size }
func (d *digest) BlockSize() int { return 1 }
func (d *digest) Reset()         { d.crc = 0 }
func (d *digest) Sum64() uint64  { return d.crc }

func (d *digest) Write(p []byte) (int, error) {
	d.crc = Update(d.crc, p)
	return len(p), nil
}

func (d *digest) Sum(in []byte) []byte {
	return binary.BigEndian.AppendUint64(in, d.crc)
}
