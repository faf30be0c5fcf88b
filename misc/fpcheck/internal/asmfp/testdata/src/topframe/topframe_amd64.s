#include "textflag.h"

#define SAVE_BP PUSHQ BP
#define RESTORE_BP POPQ BP

// Root: clears the frame pointer before calling. Accepted.

TEXT ·rootok(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	MOVQ	$0, BP
	CALL	·f(SB)
	RET

// Root: calls with the caller's frame pointer live.
TEXT ·rootbad(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	NOP
	CALL	·f(SB) // want `TOPFRAME function topframe.rootbad calls ·f\(SB\) with the caller's frame pointer live`
	RET

// Root with a frame: one path skips the clear.
TEXT ·rootpath(SB),NOSPLIT|TOPFRAME,$8
	CMPQ	AX, $0
	JEQ	skip
	XORL	BP, BP
skip:
	CALL	·f(SB) // want `topframe.rootpath calls ·f\(SB\) with the caller's frame pointer live`
	RET

// Root with a frame: every path clears (n(PC) branch over the clear).
TEXT ·rootpc(SB),NOSPLIT|TOPFRAME,$8
	CMPQ	AX, $0
	JEQ	2(PC)
	MOVQ	$1, AX
	XORQ	BP, BP
	CALL	·f(SB)
	RET

// Root that calls morestack first: morestack is a root itself.
TEXT ·rootmorestack(SB),TOPFRAME,$8
	CALL	runtime·morestack_noctxt(SB)
	MOVQ	$0, BP
	CALL	·f(SB)
	RET

// C entry: saves the callee-saved frame pointer, then clears it. Accepted.
TEXT crosscall2(SB),NOSPLIT|NOFRAME,$0-0
	SAVE_BP
	MOVQ	$0, BP
	CALL	·f(SB)
	RESTORE_BP
	RET

// C entry: clears before saving.
TEXT runtime·sigtramp(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	MOVQ	$0, BP // want `C-ABI entry runtime.sigtramp changes the frame pointer before saving it`
	CALL	·f(SB)
	RET

// C entry: saves but does not clear.
TEXT runtime·cgoSigtramp(SB),NOSPLIT|NOFRAME,$0
	MOVQ	BP, 8(SP)
	CALL	·f(SB) // want `C-ABI entry runtime.cgoSigtramp calls`
	RET
