// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the tests of the heap profiler's frame-pointer path
// (mprof_heapfp_test.go).

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
)

// FPStackExactHere walks its caller's stack as the heap profiler does and
// reports whether fpStackExact confirms the walk, with the logical stack
// fpLogicalPCs makes of it and the stack callers() records, both starting
// at the caller. With alter, the cached frame size of the innermost frame
// is made 8 bytes too large for the confirmation, which must then fail.
//
//go:noinline
func FPStackExactHere(alter bool) (exact bool, fp, slow []uintptr) {
	gp := getg()
	phys := make([]uintptr, 128)
	recs := make([]uintptr, 128)
	logic := make([]uintptr, 128)
	slow = make([]uintptr, 128)
	n, how := fpWalk(getfp(), gp.stack.lo, gp.stack.hi, phys)
	if how != fpWalkEnd {
		return false, nil, nil
	}
	phys = phys[:n]
	nl, stopped := fpLogicalPCs(0, phys, logic, false)
	var slot *atomic.Uint64
	if alter {
		d, ok := fpFrameDelta(phys[0])
		if !ok {
			return false, nil, nil
		}
		slot = fpSPDeltaSlot(phys[0])
		slot.Store(uint64(phys[0])<<16 | uint64(d/goarch.PtrSize+1))
	}
	exact = stopped && fpStackExact(getfp(), gp.stack.lo, gp.stack.hi, phys, recs)
	if slot != nil {
		slot.Store(0)
	}
	ns := callers(1, slow)
	return exact, logic[:nl], slow[:ns]
}

// FPStackExactArch reports whether fpStackExact can confirm walks here.
const FPStackExactArch = fpExactByDelta

// MemProfStackBytes returns the bytes of the heap profile stack table's
// entries.
func MemProfStackBytes() uintptr { return memProfStacks.bytes.Load() }
