// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "textflag.h"

// func prefetchWrite(addr uintptr)
TEXT ·prefetchWrite<ABIInternal>(SB),NOSPLIT|NOFRAME,$0-8
	// R0 = addr
	PRFM	(R0), PSTL1KEEP
	RET

// func prefetchWrite3(a, b, c uintptr)
TEXT ·prefetchWrite3<ABIInternal>(SB),NOSPLIT|NOFRAME,$0-24
	// R0 = a, R1 = b, R2 = c
	PRFM	(R0), PSTL1KEEP
	PRFM	(R1), PSTL1KEEP
	PRFM	(R2), PSTL1KEEP
	RET
