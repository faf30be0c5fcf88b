// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "textflag.h"
#include "cgocallbacklink_arm64.h"

// func cgoLinkWalk(fp, want, lo, hi uintptr) uintptr
// cgocallback's walk (CGO_LINK_WALK) from record fp, with lo as g0's
// stack bound and fp as cgocallback's SP, for TestCgoLinkWalk.
TEXT ·cgoLinkWalk(SB),NOSPLIT,$0-40
	MOVD	fp+0(FP), R20
	MOVD	want+8(FP), R22
	MOVD	lo+16(FP), R0
	MOVD	hi+24(FP), R1
	MOVD	ZR, R19
	CMP	R1, R20
	BHS	done
	CGO_LINK_WALK(R20, R0, R1)
done:
	MOVD	R19, ret+32(FP)
	RET
