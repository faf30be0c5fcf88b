// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Helpers for fpchain.go.

// void fpchain_call_bad_fp(void (*fn)(void)): call fn with a frame pointer
// that points nowhere, as C code built without frame records may leave.
.globl fpchain_call_bad_fp
fpchain_call_bad_fp:
	stp	x29, x30, [sp, #-16]!
	movz	x29, #0xf00d
	movk	x29, #0xbad0, lsl #16
	movk	x29, #0xf00d, lsl #32
	movk	x29, #0x0bad, lsl #48
	blr	x0
	ldp	x29, x30, [sp], #16
	ret

.section .note.GNU-stack,"",@progbits
