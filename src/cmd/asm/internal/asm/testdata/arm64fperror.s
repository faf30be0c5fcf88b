// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// TOPFRAME functions must not call while the caller's frame pointer
// is live (cmd/internal/obj/fpcheck.go).

#include "../../../../../runtime/textflag.h"

// Accepted.

TEXT ·cleared(SB),NOSPLIT|TOPFRAME,$0
	MOVD	$0, R29
	BL	·f(SB)
	RET

TEXT ·zr(SB),NOSPLIT|TOPFRAME,$16
	MOVD	ZR, R29
	CALL	·f(SB)
	RET

TEXT ·linked(SB),NOSPLIT|TOPFRAME,$0
	MOVD	56(g), R29	// a frame linked on purpose
	BL	·f(SB)
	RET

TEXT ·ownrecord(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	STP	(ZR, R30), -24(RSP)	// a record whose saved R29 is zero
	SUB	$32, RSP
	ADD	$8, RSP, R29
	BL	·f(SB)
	RET

TEXT ·pair(SB),NOSPLIT|TOPFRAME,$0
	LDP	(R0), (R29, R30)
	BL	·f(SB)
	RET

TEXT ·bothpaths(SB),NOSPLIT|TOPFRAME,$0
	CBZ	R0, zero
	MOVD	$0, R29
	B	call
zero:
	MOVD	ZR, R29
call:
	BL	·f(SB)
	RET

TEXT ·unreachable(SB),NOSPLIT|TOPFRAME,$0
	RET
	BL	·f(SB)	// no path from the entry
	RET

TEXT ·nocheck(SB),NOSPLIT|TOPFRAME|NOFPCHECK,$0
	BL	·f(SB)	// opted out
	RET

TEXT ·nottop(SB),NOSPLIT,$0
	BL	·f(SB)	// not TOPFRAME
	RET

TEXT ·nocall(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	B	·f(SB)	// a tail jump is not a call

// Rejected.

TEXT ·live(SB),NOSPLIT|NOFRAME|TOPFRAME,$0
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.live calls with the caller's frame pointer live"
	RET

TEXT ·prologue(SB),NOSPLIT|TOPFRAME,$16
	// The frame record the assembler inserts links to the caller.
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.prologue calls with the caller's frame pointer live"
	RET

TEXT ·onepath(SB),NOSPLIT|TOPFRAME,$0
	CBZ	R0, 2(PC)
	MOVD	$0, R29
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.onepath calls with the caller's frame pointer live"
	RET

TEXT ·condbranch(SB),NOSPLIT|TOPFRAME,$0
	CMP	$1, R0
	BEQ	call
	TBZ	$3, R1, call
	MOVD	$0, R29
call:
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.condbranch calls with the caller's frame pointer live"
	RET

TEXT ·indirect(SB),NOSPLIT|TOPFRAME,$0
	BL	(R3)	// ERROR "TOPFRAME function pkg.indirect calls with the caller's frame pointer live"
	CALL	(R4)	// ERROR "TOPFRAME function pkg.indirect calls with the caller's frame pointer live"
	RET

TEXT ·restored(SB),NOSPLIT|TOPFRAME,$16
	MOVD	$0, R29
	BL	·f(SB)
	MOVD	-8(RSP), R29
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.restored calls with the caller's frame pointer live"
	LDP	-8(RSP), (R29, R30)
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.restored calls with the caller's frame pointer live"
	RET

TEXT ·derived(SB),NOSPLIT|TOPFRAME,$0
	ADD	$16, R29
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.derived calls with the caller's frame pointer live"
	MOVK	$1, R29
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.derived calls with the caller's frame pointer live"
	MOVD	(R29), R29
	BL	·f(SB)	// ERROR "TOPFRAME function pkg.derived calls with the caller's frame pointer live"
	RET

TEXT ·stray(SB),NOSPLIT|NOFPCHECK,$0	// ERROR "NOFPCHECK function pkg.stray is not TOPFRAME"
	RET
