// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "textflag.h"

// The assembler has no PREFETCHW mnemonic: 0F 0D /1, with ModRM 00 001 rrr
// for (AX), (BX) and (CX).
#define PREFETCHW_AX BYTE $0x0f; BYTE $0x0d; BYTE $0x08
#define PREFETCHW_BX BYTE $0x0f; BYTE $0x0d; BYTE $0x0b
#define PREFETCHW_CX BYTE $0x0f; BYTE $0x0d; BYTE $0x09

// func prefetchWrite(addr uintptr)
TEXT ·prefetchWrite<ABIInternal>(SB),NOSPLIT|NOFRAME,$0-8
	// AX = addr
	CMPB	·prefetchwOK(SB), $0
	JEQ	read
	PREFETCHW_AX
	RET
read:
	PREFETCHT0	(AX)
	RET

// func prefetchWrite3(a, b, c uintptr)
TEXT ·prefetchWrite3<ABIInternal>(SB),NOSPLIT|NOFRAME,$0-24
	// AX = a, BX = b, CX = c
	CMPB	·prefetchwOK(SB), $0
	JEQ	read
	PREFETCHW_AX
	PREFETCHW_BX
	PREFETCHW_CX
	RET
read:
	PREFETCHT0	(AX)
	PREFETCHT0	(BX)
	PREFETCHT0	(CX)
	RET

// func prefetchwSupported() bool
TEXT ·prefetchwSupported(SB),NOSPLIT,$0-1
	MOVL	$0x80000000, AX
	XORL	CX, CX
	CPUID
	CMPL	AX, $0x80000001
	JB	no
	MOVL	$0x80000001, AX
	XORL	CX, CX
	CPUID
	SHRL	$8, CX
	ANDL	$1, CX
	MOVB	CX, ret+0(FP)
	RET
no:
	MOVB	$0, ret+0(FP)
	RET
