// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Two levels of C between a cgo call and its callback, with and without
// frame pointers (gcc's optimize attribute), for cgocb_test.go: with them
// the chain from crosscall2 through the export stub and both functions to
// asmcgocall is valid (four records); without them, with data in the
// frame-pointer register, it is not.

#include "_cgo_export.h"

#define CGOCB_FP __attribute__((noinline, optimize("O2", "no-omit-frame-pointer")))
#define CGOCB_NOFP __attribute__((noinline, optimize("O2", "omit-frame-pointer")))

volatile int cgocb_sink;

CGOCB_FP static void cgocb_fp_inner(int n) { cgocbGo(n); cgocb_sink++; }
CGOCB_FP void cgocb_fp(int n) { cgocb_fp_inner(n); cgocb_sink++; }
// cgocb_nofp_inner holds data in the frame-pointer register across the
// callback, as -O2 code without frame pointers may (the export stub does
// when built without -fno-omit-frame-pointer). gcc keeps that register for
// frames in this file (cgocb.go's CFLAGS), so it is loaded by hand.
CGOCB_NOFP static void cgocb_nofp_inner(int n) {
	long saved;
#if defined(__x86_64__)
	__asm__ volatile("mov %%rbp, %0\n\tmov %1, %%rbp" : "=&r"(saved) : "r"((long)n));
	cgocbGo(n);
	__asm__ volatile("mov %0, %%rbp" : : "r"(saved));
#elif defined(__aarch64__)
	__asm__ volatile("mov %0, x29\n\tmov x29, %1" : "=&r"(saved) : "r"((long)n));
	cgocbGo(n);
	__asm__ volatile("mov x29, %0" : : "r"(saved));
#else
	cgocbGo(n);
#endif
	cgocb_sink++;
}
CGOCB_NOFP void cgocb_nofp(int n) { cgocb_nofp_inner(n); cgocb_sink++; }
