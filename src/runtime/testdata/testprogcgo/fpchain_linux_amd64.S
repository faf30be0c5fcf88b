// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Helpers for fpchain.go.

// void fpchain_call_bad_fp(void (*fn)(void)): call fn with a frame pointer
// that points nowhere, as C code built without frame pointers may leave.
.globl fpchain_call_bad_fp
fpchain_call_bad_fp:
	pushq	%rbp
	movabsq	$0x0badf00dbadf00d0, %rbp
	call	*%rdi
	popq	%rbp
	ret

.section .note.GNU-stack,"",@progbits
