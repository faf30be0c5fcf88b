// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// TOPFRAME functions must not call while the caller's frame pointer
// is live (cmd/internal/obj/fpcheck.go).

#include "../../../../../runtime/textflag.h"

// Accepted.

TEXT ·cleared(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	MOVQ	$0, BP
	CALL	·f(SB)
	RET

TEXT ·xored(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	PUSHQ	BP	// saved first, as a C-ABI entry must
	XORL	BP, BP
	CALL	·f(SB)
	POPQ	BP
	RET

TEXT ·framed(SB),NOSPLIT|TOPFRAME,$16
	XORL	BP, BP
	CALL	·f(SB)
	RET

TEXT ·linked(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	MOVQ	8(AX), BP	// a frame the function links to on purpose
	CALL	·f(SB)
	RET

TEXT ·bothpaths(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	CMPQ	AX, $0
	JEQ	zero
	MOVQ	$0, BP
	JMP	call
zero:
	XORL	BP, BP
call:
	CALL	·f(SB)
	RET

TEXT ·unreachable(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	RET
	CALL	·f(SB)	// no path from the entry
	RET

TEXT ·loop(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	XORL	BP, BP
again:
	CALL	·f(SB)
	ADDQ	$8, BP	// derived from the cleared value
	JMP	again

TEXT ·nocheck(SB),NOSPLIT|NOFRAME|TOPFRAME|NOFPCHECK,$0
	CALL	·f(SB)	// opted out
	RET

TEXT ·nottop(SB),NOSPLIT|NOFRAME,$0
	CALL	·f(SB)	// not TOPFRAME: the frame pointer links to the caller
	RET

TEXT ·nocall(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	JMP	·f(SB)	// a tail jump is not a call
	RET

// Rejected.

TEXT ·live(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.live calls with the caller's frame pointer live"
	RET

TEXT ·prologue(SB),NOSPLIT|TOPFRAME,$16
	// The frame record the assembler inserts links to the caller.
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.prologue calls with the caller's frame pointer live"
	RET

TEXT ·zeroframe(SB),NOSPLIT|TOPFRAME,$0
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.zeroframe calls with the caller's frame pointer live"
	RET

TEXT ·onepath(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	CMPQ	AX, $0
	JEQ	call
	XORL	BP, BP
call:
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.onepath calls with the caller's frame pointer live"
	RET

TEXT ·pcrel(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	CMPQ	AX, $0
	JEQ	2(PC)
	XORL	BP, BP
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.pcrel calls with the caller's frame pointer live"
	RET

TEXT ·indirect(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	CALL	AX	// ERROR "TOPFRAME function pkg.indirect calls with the caller's frame pointer live"
	CALL	(AX)	// ERROR "TOPFRAME function pkg.indirect calls with the caller's frame pointer live"
	RET

TEXT ·late(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.late calls with the caller's frame pointer live"
	XORL	BP, BP
	CALL	·f(SB)
	RET

TEXT ·restored(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	PUSHQ	BP
	XORL	BP, BP
	CALL	·f(SB)
	POPQ	BP
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.restored calls with the caller's frame pointer live"
	RET

TEXT ·reloaded(SB),NOSPLIT|TOPFRAME,$16
	XORL	BP, BP
back:
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.reloaded calls with the caller's frame pointer live"
	MOVQ	x-8(SP), BP
	JMP	back

TEXT ·derived(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	ANDQ	$~15, BP
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.derived calls with the caller's frame pointer live"
	MOVQ	0(BP), BP
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.derived calls with the caller's frame pointer live"
	MOVW	$0, BP
	CALL	·f(SB)	// ERROR "TOPFRAME function pkg.derived calls with the caller's frame pointer live"
	RET

TEXT ·stray(SB),NOSPLIT|NOFPCHECK,$0	// ERROR "NOFPCHECK function pkg.stray is not TOPFRAME"
	RET
