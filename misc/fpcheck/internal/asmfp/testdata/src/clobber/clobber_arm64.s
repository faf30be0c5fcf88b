#include "textflag.h"

// Root: clears before calling. Accepted.

// Clobbers, as x/tools' framepointer pass reports them.
TEXT ·clobber(SB),NOSPLIT,$0
	MOVD	R1, R29 // want `frame pointer is clobbered before saving`
	RET

TEXT ·clobberldp(SB),NOSPLIT,$0
	LDP	8(R0), (R26, R29) // want `frame pointer is clobbered before saving`
	RET

TEXT ·saved(SB),NOSPLIT,$0
	MOVD	R29, R2
	MOVD	R1, R29
	MOVD	R2, R29
	RET
