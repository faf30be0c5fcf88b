#include "textflag.h"

#define SAVE_BP PUSHQ BP
#define RESTORE_BP POPQ BP

// Root: clears the frame pointer before calling. Accepted.

// Stack switch without a frame-pointer write.
TEXT ·switchbad(SB),NOSPLIT,$0
	MOVQ	0(DI), SP
	CALL	·f(SB) // want `stackswitch.switchbad switches stacks and then calls ·f\(SB\) with the frame pointer still pointing into the old stack`
	RET

// Stack switch that clears the frame pointer and never returns. Accepted.
TEXT ·switchclear(SB),NOSPLIT,$0
	MOVQ	0(DI), SP
	MOVQ	$0, BP
	CALL	·f(SB)
	CALL	runtime·abort(SB)
	RET

// Stack switch annotated as a deliberate link. Accepted.
TEXT ·switchlink(SB),NOSPLIT,$0
	MOVQ	0(DI), SP // fpcheck:link: the old frames stay put while linked
	CALL	·f(SB)
	RET

// Stack switch that links to a saved frame pointer, then switches back.
TEXT ·switchback(SB),NOSPLIT,$16
	MOVQ	SP, R12
	MOVQ	(g_sched+gobuf_sp)(DI), SP
	MOVQ	(g_sched+gobuf_bp)(DI), BP
	CALL	·f(SB)
	MOVQ	R12, SP
	CALL	·f(SB)
	RET

// Adjusting SP is not a switch.
TEXT ·adjust(SB),NOSPLIT,$0
	SUBQ	$32, SP
	ANDQ	$~15, SP
	CALL	·f(SB)
	RET

// A context switch: loads a saved frame pointer and jumps away.
TEXT ·ctxswitch(SB),NOSPLIT,$0
	MOVQ	(g_sched+gobuf_sp)(BX), SP
	MOVQ	(g_sched+gobuf_bp)(BX), BP
	JMP	AX

// The frame pointer is computed from the register the new SP then comes
// from, moved only by register arithmetic (the fork's cgocallback): it
// already points into the new stack. Accepted.
TEXT ·switchbase(SB),NOSPLIT,$0
	MOVQ	(g_sched+gobuf_sp)(SI), DI
	LEAQ	-16(DI), BP
	SUBQ	R8, DI
	MOVQ	DI, SP
	CALL	·f(SB)
	RET

// The same, but the register is reloaded before the switch: the frame
// pointer points into whatever stack it was computed from.
TEXT ·switchbaselost(SB),NOSPLIT,$0
	MOVQ	(g_sched+gobuf_sp)(SI), DI
	LEAQ	-16(DI), BP
	MOVQ	8(SI), DI
	MOVQ	DI, SP
	CALL	·f(SB) // want `stackswitch.switchbaselost switches stacks and then calls ·f\(SB\) with the frame pointer still pointing into the old stack`
	RET
