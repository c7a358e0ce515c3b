//go:build amd64 && !purego

#include "textflag.h"

// func fold(crc uint64, p []byte, keys *[4]uint64) (lo, hi uint64)
//
// X1-X4 hold four consecutive 16-byte blocks. Each round multiplies every
// block's two halves by the keys of a 512-bit distance (PCLMULQDQ 0x00:
// low halves, 0x11: high halves), xors the products and the block 64 bytes
// on. Then the four are folded into X1 one after the other (keys of a
// 128-bit distance), and so is every block left after them.
TEXT ·fold(SB), NOSPLIT, $0-56
	MOVQ  crc+0(FP), AX
	NOTQ  AX
	MOVQ  p_base+8(FP), SI
	MOVQ  p_len+16(FP), CX
	MOVQ  keys+32(FP), R8

	MOVOU (SI), X1
	MOVOU 16(SI), X2
	MOVOU 32(SI), X3
	MOVOU 48(SI), X4
	MOVQ  AX, X0
	PXOR  X0, X1
	ADDQ  $64, SI
	SUBQ  $64, CX
	MOVOU (R8), X0
	CMPQ  CX, $64
	JB    merge

loop64:
	MOVOA     X1, X5
	MOVOA     X2, X6
	MOVOA     X3, X7
	MOVOA     X4, X8
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x00, X0, X2
	PCLMULQDQ $0x00, X0, X3
	PCLMULQDQ $0x00, X0, X4
	PCLMULQDQ $0x11, X0, X5
	PCLMULQDQ $0x11, X0, X6
	PCLMULQDQ $0x11, X0, X7
	PCLMULQDQ $0x11, X0, X8
	MOVOU     (SI), X9
	MOVOU     16(SI), X10
	MOVOU     32(SI), X11
	MOVOU     48(SI), X12
	PXOR      X5, X1
	PXOR      X6, X2
	PXOR      X7, X3
	PXOR      X8, X4
	PXOR      X9, X1
	PXOR      X10, X2
	PXOR      X11, X3
	PXOR      X12, X4
	ADDQ      $64, SI
	SUBQ      $64, CX
	CMPQ      CX, $64
	JAE       loop64

merge:
	MOVOU     16(R8), X0
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X2, X1
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X3, X1
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X4, X1

loop16:
	CMPQ      CX, $16
	JB        done
	MOVOU     (SI), X9
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X9, X1
	ADDQ      $16, SI
	SUBQ      $16, CX
	JMP       loop16

done:
	MOVQ   X1, lo+40(FP)
	PSRLDQ $8, X1
	MOVQ   X1, hi+48(FP)
	RET
