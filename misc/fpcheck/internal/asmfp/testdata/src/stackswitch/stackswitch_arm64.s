#include "textflag.h"

// Root: clears before calling. Accepted.

// Stack switch without a frame-pointer write.
TEXT ·switchbad(SB),NOSPLIT,$0
	MOVD	(g_sched+gobuf_sp)(R0), R1
	MOVD	R1, RSP
	BL	·f(SB) // want `stackswitch.switchbad switches stacks and then calls ·f\(SB\)`
	RET

// Stack switch that clears. Accepted.
TEXT ·switchclear(SB),NOSPLIT,$0
	MOVD	(g_sched+gobuf_sp)(R0), R1
	MOVD	R1, RSP
	MOVD	$0, R29
	BL	·f(SB)
	B	runtime·abort(SB)

// An SP-derived register written back to SP is not a switch.
TEXT ·adjust(SB),NOSPLIT,$0
	SUB	$32, RSP, R2
	MOVD	R2, RSP
	BL	·f(SB)
	RET

// Stack switch annotated as a deliberate link. Accepted.
TEXT ·switchlink(SB),NOSPLIT,$0
	MOVD	R1, RSP // fpcheck:link: the old frames stay put while linked
	BL	·f(SB)
	RET
