// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "textflag.h"

// func lineageThreadPointer() uintptr
TEXT ·lineageThreadPointer(SB),NOSPLIT,$0-8
	MRS	TPIDR_EL0, R0
	MOVD	R0, ret+0(FP)
	RET
