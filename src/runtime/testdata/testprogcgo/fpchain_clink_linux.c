// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build amd64 || arm64

// C for fpchain_clink.go: three levels of C between a cgo call and the
// callback into Go, built with and without frame pointers (gcc's optimize
// attribute; other compilers ignore it and the test skips the build
// variants it cannot tell apart), and with a corrupted frame record.

#include <stdint.h>

extern void goCLinkCallback(int);

volatile int clink_sink;

#define CLINK_FP __attribute__((noinline, optimize("O2", "no-omit-frame-pointer")))
#define CLINK_O0 __attribute__((noinline, optimize("O0", "no-omit-frame-pointer")))
#define CLINK_NOFP __attribute__((noinline, optimize("O2", "omit-frame-pointer")))

// Each function does some work after its call, so that none is a tail call.
#define CLINK_LEVELS(attr, name) \
	attr void name##_inner(int mode) { goCLinkCallback(mode); clink_sink++; } \
	attr void name##_mid(int mode) { name##_inner(mode); clink_sink++; } \
	attr void name##_outer(int mode) { name##_mid(mode); clink_sink++; }

CLINK_LEVELS(CLINK_O0, clink_o0)
CLINK_LEVELS(CLINK_FP, clink_o2)
CLINK_LEVELS(CLINK_NOFP, clink_nofp)

// clink_bad_mid keeps a frame pointer but corrupts the saved one in its
// frame record while it calls back: the walk from C's frame pointer must
// cut there.
CLINK_FP void clink_bad_mid(int mode) {
	void **fp = __builtin_frame_address(0);
	void *saved = fp[0];
	fp[0] = (void *)(uintptr_t)0x0badf00dbadf00d0;
	clink_o2_inner(mode);
	fp[0] = saved;
	clink_sink++;
}

CLINK_FP void clink_bad_outer(int mode) { clink_bad_mid(mode); clink_sink++; }
