// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package cgocb measures a cgo call that calls back into Go: the path on
// which the fork checks and links the C frames between the callback and
// the cgo call into the callback's frame-pointer chain (doc/fp-boundaries.md).
package cgocb

/*
// The export stub in _cgo_export.c keeps its frame record too: without
// it (gcc -O2 on x86-64), the stub holds data in BP and no chain through
// C is valid, whatever cgocb.c does.
#cgo CFLAGS: -fno-omit-frame-pointer
void cgocb_fp(int);
void cgocb_nofp(int);
*/
import "C"

var sink int

//export cgocbGo
func cgocbGo(n C.int) { sink += int(n) }

// CallFP calls C code that keeps frame pointers, which calls back into Go.
func CallFP(n int) { C.cgocb_fp(C.int(n)) }

// CallNoFP calls C code built without frame pointers, which calls back.
func CallNoFP(n int) { C.cgocb_nofp(C.int(n)) }
