// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Per-M scratch space for the frame-pointer unwinders of the profiles and
// for GODEBUG=fpunwindcheck, which repeats their unwinds with the slow
// unwinder. It is allocated with mp.profStack (mProfStackInit), whose size
// follows debug.profstackdepth, and hangs off m at the end of the struct,
// so that upstream's offsets in m do not move.

package runtime

// fpProfScratch is per-M scratch space for the frame-pointer profilers.
// Each buffer holds len(mp.profStack) PCs. Its users never allocate while
// they hold it, so an allocation profiled in between cannot clobber it.
type fpProfScratch struct {
	phys  []uintptr // physical PCs from fpWalk
	logic []uintptr // logical PCs from fpLogicalPCs (heap profiler)
	slow  []uintptr // the slow unwinder's PCs, for fpunwindcheck
	aux   []uintptr // logical PCs for savegFP called from the scheduler
	recs  []uintptr // frame record addresses, for fpStackExact (heap profiler)
}

// fpProfScratchInit allocates mp's scratch space; see mProfStackInit.
func fpProfScratchInit(mp *m) {
	n := len(mp.profStack)
	buf := make([]uintptr, 5*n)
	mp.fpScratch = &fpProfScratch{
		phys:  buf[:n:n],
		logic: buf[n : 2*n : 2*n],
		slow:  buf[2*n : 3*n : 3*n],
		aux:   buf[3*n : 4*n : 4*n],
		recs:  buf[4*n:],
	}
}
