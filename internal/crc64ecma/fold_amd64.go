//go:build amd64 && !purego

package crc64ecma

import "golang.org/x/sys/cpu"

// haveFold: PCLMULQDQ and the SSE2 moves the fold uses.
var haveFold = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE2

// fold folds p (a multiple of 16 bytes, at least 64) into one 16-byte
// block congruent to it modulo P, after xoring crc's complement into its
// first 8 bytes; keys are foldKeys. It returns the block's two halves as
// little-endian words.
//
//go:noescape
func fold(crc uint64, p []byte, keys *[4]uint64) (lo, hi uint64)
