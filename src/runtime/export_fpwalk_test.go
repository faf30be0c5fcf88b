// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the tests of the frame-pointer walker and the stack table
// (mprof_fpwalk_test.go) and for their benchmarks (mprof_heapfp_bench_test.go).

package runtime

import (
	"internal/goarch"
	"unsafe"
)

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

// FPStackTabEntry inserts phys into a table of its own and reports the
// bytes the table allocated for the entry, whether phys finds the entry,
// and whether each of others finds none.
func FPStackTabEntry(phys []uintptr, others [][]uintptr) (bytes uintptr, found bool, othersMiss []bool) {
	tab := &fpStackTabTest
	*tab = fpStackTab{name: "test", nbuckets: 1 << 4}
	tab.insert(fpStackHash(phys, 1), phys, 1, false, nil, nil, true)
	e := tab.lookup(fpStackHash(phys, 1), phys, 1, false)
	for _, o := range others {
		othersMiss = append(othersMiss, tab.lookup(fpStackHash(o, 1), o, 1, false) == nil)
	}
	return tab.bytes.Load(), e != nil && e.slow, othersMiss
}

// fpStackTabTest is FPStackTabEntry's and FPStackTabFirstInsert's table,
// new at each call (the old one's memory is not reused).
var fpStackTabTest fpStackTab

// FPStackTabFirstInsert inserts phys into a new table, which maps its
// chain heads for it, reports whether phys then finds its entry, and
// unmaps the heads.
func FPStackTabFirstInsert(phys []uintptr) bool {
	tab := &fpStackTabTest
	*tab = fpStackTab{name: "test", nbuckets: 1 << 4}
	h := fpStackHash(phys, 1)
	tab.insert(h, phys, 1, false, nil, nil, false)
	found := tab.lookup(h, phys, 1, false) != nil
	sysFree(tab.buckets.Load(), tab.nbuckets*goarch.PtrSize, &memstats.buckhash_sys)
	return found
}

// FPStackEntryHeader is the size of a stack table entry without its PCs.
const FPStackEntryHeader = unsafe.Sizeof(fpStackEntry{})
