// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the tests of the frame-pointer walker (mprof_fpwalk_test.go)
// and its benchmarks (mprof_heapfp_bench_test.go).

package runtime

// FPStackHash is the hash the profiles' stack tables and index use.
func FPStackHash(stk []uintptr, extra uintptr) uintptr { return fpStackHash(stk, extra) }

// FPWalkHere walks the caller's frame pointers into buf, as mProf_Malloc's
// frame-pointer path does (the stack-capture step alone).
//
//go:noinline
func FPWalkHere(buf []uintptr) int {
	gp := getg()
	n, _ := fpWalk(getfp(), gp.stack.lo, gp.stack.hi, buf)
	return n
}

// CallersHere is the slow path's stack-capture step, callers().
//
//go:noinline
func CallersHere(buf []uintptr) int {
	return callers(1, buf)
}
