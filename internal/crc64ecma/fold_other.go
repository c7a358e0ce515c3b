//go:build !amd64 || purego

package crc64ecma

// haveFold is false: Update is hash/crc64 here.
const haveFold = false

func fold(uint64, []byte, *[4]uint64) (lo, hi uint64) {
	panic("crc64ecma: no fold on this platform")
}
