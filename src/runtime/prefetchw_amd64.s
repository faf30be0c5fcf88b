// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "go_asm.h"
#include "textflag.h"

// The assembler has no PREFETCHW mnemonic: 0F 0D /1, with ModRM 00 001 rrr
// for (AX), (BX) and (CX).
#define PREFETCHW_AX BYTE $0x0f; BYTE $0x0d; BYTE $0x08
#define PREFETCHW_BX BYTE $0x0f; BYTE $0x0d; BYTE $0x0b
#define PREFETCHW_CX BYTE $0x0f; BYTE $0x0d; BYTE $0x09

// func prefetchWrite(addr uintptr)
TEXT ·prefetchWrite<ABIInternal>(SB),NOSPLIT|NOFRAME,$0-8
	// AX = addr
	CMPB	internal∕cpu·X86+const_offsetX86HasPRFCHW(SB), $0
	JEQ	read
	PREFETCHW_AX
	RET
read:
	PREFETCHT0	(AX)
	RET

// func prefetchWrite3(a, b, c uintptr)
TEXT ·prefetchWrite3<ABIInternal>(SB),NOSPLIT|NOFRAME,$0-24
	// AX = a, BX = b, CX = c
	CMPB	internal∕cpu·X86+const_offsetX86HasPRFCHW(SB), $0
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
