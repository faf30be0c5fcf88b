// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package cgocbold is package cgocb as first measured (doc/benchmarks.md,
// "cgo callbacks through C frames"), kept to compare with those numbers:
// its export stub is built with cgo's default flags (on x86-64 without
// frame pointers), and the walk over C's frame records stops early.
package cgocbold

/*
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
