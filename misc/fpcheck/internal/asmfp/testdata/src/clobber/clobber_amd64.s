#include "textflag.h"

#define SAVE_BP PUSHQ BP
#define RESTORE_BP POPQ BP

// Root: clears the frame pointer before calling. Accepted.

// Clobbers, as x/tools' framepointer pass reports them.
TEXT ·clobber(SB),NOSPLIT,$0
	MOVQ	AX, BP // want `frame pointer is clobbered before saving`
	RET

TEXT ·clobberlea(SB),NOSPLIT,$0-8
	LEAQ	8(SP), BP // want `frame pointer is clobbered before saving`
	RET

// Saved first. Accepted.
TEXT ·saved(SB),NOSPLIT,$0
	PUSHQ	BP
	MOVQ	AX, BP
	POPQ	BP
	RET

// A function with a frame may use BP: the epilogue restores it.
TEXT ·framed(SB),NOSPLIT,$16
	MOVQ	AX, BP
	RET
