// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "textflag.h"
#include "cgocallbacklink_amd64.h"

// func cgoLinkWalk(fp, want, lo, hi uintptr) uintptr
// cgocallback's walk (CGO_LINK_WALK) from record fp, with lo as g0's
// stack bound and fp as cgocallback's SP, for TestCgoLinkWalk.
TEXT ·cgoLinkWalk(SB),NOSPLIT,$0-40
	MOVQ	fp+0(FP), R12
	MOVQ	want+8(FP), R13
	MOVQ	lo+16(FP), AX
	MOVQ	hi+24(FP), BX
	XORL	R11, R11
	CMPQ	R12, BX
	JCC	done
	CGO_LINK_WALK(R12, AX, BX)
done:
	MOVQ	R11, ret+32(FP)
	RET
