#include "textflag.h"

// Root: clears before calling. Accepted.

TEXT ·rootok(SB),NOSPLIT|TOPFRAME,$0
	MOVD	$0, R29
	BL	·f(SB)
	RET

// Root: the zero register form. Accepted.
TEXT ·rootzr(SB),NOSPLIT|TOPFRAME,$16
	MOVD	ZR, R29
	CALL	·f(SB)
	RET

// Root: calls with the caller's frame pointer live.
TEXT ·rootbad(SB),NOSPLIT|TOPFRAME,$0
	BL	·f(SB) // want `TOPFRAME function topframe.rootbad calls ·f\(SB\) with the caller's frame pointer live`
	RET

// Root: one path (CBZ) skips the clear.
TEXT ·rootpath(SB),NOSPLIT|TOPFRAME,$16
	CBZ	R0, skip
	MOVD	$0, R29
skip:
	BL	(R3) // want `topframe.rootpath calls \(R3\) with the caller's frame pointer live`
	RET

// C entry: saves, then clears. Accepted.
TEXT crosscall2(SB),NOSPLIT|NOFRAME,$0
	SUB	$16, RSP
	STP	(R29, R30), (RSP)
	MOVD	$0, R29
	BL	·f(SB)
	LDP	(RSP), (R29, R30)
	ADD	$16, RSP
	RET

// C entry: clears before saving.
TEXT runtime·sigtramp(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	MOVD	ZR, R29 // want `C-ABI entry runtime.sigtramp changes the frame pointer before saving it`
	BL	·f(SB)
	RET
