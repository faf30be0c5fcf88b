// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include "textflag.h"

// func lineageThreadPointer() uintptr
// Returns the FS base, read with arch_prctl(ARCH_GET_FS) so that it works
// whether or not the CPU and kernel allow RDFSBASE.
TEXT ·lineageThreadPointer(SB),NOSPLIT,$8-8
	MOVQ	$0, tp-8(SP)
	MOVQ	$0x1003, DI	// ARCH_GET_FS
	LEAQ	tp-8(SP), SI
	MOVQ	$158, AX	// SYS_arch_prctl
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$0, ret+0(FP)
	RET
ok:
	MOVQ	tp-8(SP), AX
	MOVQ	AX, ret+0(FP)
	RET
