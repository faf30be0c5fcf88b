// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Two levels of C between a cgo call and its callback, with and without
// frame pointers (gcc's optimize attribute), for cgocb_test.go.

#include "_cgo_export.h"

#define CGOCB_FP __attribute__((noinline, optimize("O2", "no-omit-frame-pointer")))
#define CGOCB_NOFP __attribute__((noinline, optimize("O2", "omit-frame-pointer")))

volatile int cgocb_sink;

CGOCB_FP static void cgocb_fp_inner(int n) { cgocbGo(n); cgocb_sink++; }
CGOCB_FP void cgocb_fp(int n) { cgocb_fp_inner(n); cgocb_sink++; }
CGOCB_NOFP static void cgocb_nofp_inner(int n) { cgocbGo(n); cgocb_sink++; }
CGOCB_NOFP void cgocb_nofp(int n) { cgocb_nofp_inner(n); cgocb_sink++; }
