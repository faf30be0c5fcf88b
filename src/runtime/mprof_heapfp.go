// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Frame-pointer unwinding for the heap profiler.
//
// Upstream, every sampled allocation calls callers(), whose cost grows with
// stack depth by a pcvalue decode per frame. mProf_MallocFP records the same
// stacks for the cost of a frame-pointer walk and one hash lookup:
//
//   - fpWalk collects the physical PCs, from the current frame on a user
//     goroutine, or on the system stack (g0, after systemstack or mcall)
//     for as long as the chain stays on that stack. callers() does not
//     jump stacks either: it ends at runtime.systemstack, runtime.mcall or
//     the thread's root, and so does the walk (issue 66385 proposes to
//     change what the heap profiler shows there; this keeps today's stacks).
//   - The physical stack and the allocation size are looked up in
//     memProfStacks (an fpStackTab, mprof_fpstktab.go), which maps them
//     to the bucket that holds the logical stack. Buckets keep storing
//     exactly what callers() stores, so MemProfile and runtime/pprof read
//     them unchanged, and a stack cut at debug.profstackdepth lands in one
//     bucket however long the physical stacks behind it are.
//   - On a miss the physical stack is expanded (fpLogicalPCs) and
//     confirmed: on amd64 by checking that the walk read each return PC
//     from the slot the slow unwinder reads it from (fpStackExact, which
//     needs only the frame sizes, cached per PC), else by running
//     callers() as well. Only if the stack is confirmed does the physical
//     stack's entry point to the bucket; otherwise the entry sends it to
//     the slow path for good.
//   - A stack confirmed by its frame sizes gets its entry the second time
//     it is sampled, not the first: a sample whose logical stack has no
//     bucket yet creates the bucket and nothing else. Many stacks of a
//     program that keeps meeting new ones (a fresh process, a short-lived
//     program) are sampled once, and an entry is memory to fault in and
//     fill for each; a stack sampled again pays its expansion twice.
//
// Entries, like buckets, are never freed. GODEBUG=memprofilefpunwindoff=1
// restores the upstream path, also when set at run time.

package runtime

import "unsafe"

// memProfStacks maps a physical stack, walked on the system stack or not
// (flag), and an allocation size (key) to a memory profile bucket, or to
// the slow path (see mprof_fpstktab.go). Its 65536 chains (512 KB of
// heads, touched as stacks arrive) keep them short where the index
// (mprof_fpindex.go) overflows: with tens of thousands of stacks, each
// entry passed on a chain was one more wait for memory.
var memProfStacks = fpStackTab{name: "heap profile stack table", nbuckets: 1 << 16}

// fpOSStackSlack is how far above g0.stack.hi the frames of a thread's
// root functions may lie on an OS-allocated stack.
const fpOSStackSlack = 1024

// memProfFP reports whether mProf_Malloc should use mProf_MallocFP.
func memProfFP(mp *m) bool {
	return fpProfArch && debug.memprofilefpunwindoff.Load() == 0 && mp.fpScratch != nil && !mp.fpUnwindNeedsCgoTraceback() && !fpUnwindPanicking(mp.curg)
}

// memProfWalkBounds returns the mode of a heap profile walk on gp (1 on
// the system stack, 0 on a user goroutine) and the upper bound of its
// frame records.
func memProfWalkBounds(mp *m, gp *g) (mode, hi uintptr) {
	if gp != mp.curg {
		mode = 1
	}
	hi = gp.stack.hi
	if mode == 1 && (mp == &m0 || iscgo || mStackIsSystemAllocated()) {
		// An OS-allocated g0 stack's recorded top (see mstart0) lies
		// below the frames of mstart0 and mstart.
		hi += fpOSStackSlack
	}
	return mode, hi
}

// memProfWalkOK reports whether a heap profile walk of the given mode
// that ended with how holds the whole stack callers() would record.
func memProfWalkOK(how int, mode uintptr) bool {
	return how == fpWalkEnd || how == fpWalkFull || (how == fpWalkLeft && mode == 1)
}

// mProf_MallocFP returns the bucket for the current allocation of the given
// size, as mProf_Malloc would find with callers(3, ...). It is called only by
// mProf_Malloc and calls callers(4, ...) itself to skip its own frame, so it
// must not be inlined.
//
//go:noinline
func mProf_MallocFP(mp *m, p unsafe.Pointer, size uintptr) (*bucket, *specialprofile) {
	sc := mp.fpScratch
	gp := getg()
	// The first PC is the return address into mProf_Malloc; skipping three
	// logical frames (mProf_Malloc, profilealloc, and the malloc function
	// that called it) matches callers(3) in mProf_Malloc.
	mode, hi := memProfWalkBounds(mp, gp)
	n, how := fpWalk(getfp(), gp.stack.lo, hi, sc.phys)
	ok := memProfWalkOK(how, mode)
	depth := int(debug.profstackdepth) + 2
	if !ok {
		nstk := callers(4, mp.profStack[:depth])
		if debug.fpunwindcheck != 0 {
			nfp, _ := fpLogicalPCs(3, sc.phys[:n], sc.logic[:depth], false)
			fpunwindcheckRecord(fpunwindcheckHeap, gp, sc.logic[:nfp], mp.profStack[:nstk])
		}
		return stkbucket(memProfile, size, mp.profStack[:nstk], true), nil
	}
	phys := sc.phys[:n]
	h := fpStackHash(phys, size^mode<<1)
	// The stack's slot in the index is most likely not in the caches, nor
	// is its chain head in the stack table, where a stack the index cannot
	// hold is found: ask for both, and attach the object's profile record,
	// which waits for memory of its own, while they come. mProf_Malloc
	// sets the record's bucket; until then nothing reads it (the object
	// cannot be swept).
	memProfIndex.prefetch(h, len(phys))
	memProfStacks.prefetch(h)
	var sp *specialprofile
	systemstack(func() {
		sp = setprofilebucket(p, nil)
	})
	if debug.fpunwindcheck == 0 {
		if b, slow, ok := memProfIndex.find(&memProfStacks, h, phys, size, mode == 1); ok { // mprof_fpindex.go
			if !slow {
				return b, sp
			}
			nstk := callers(4, mp.profStack[:depth])
			return stkbucket(memProfile, size, mp.profStack[:nstk], true), sp
		}
	}

	// Miss, or fpunwindcheck: expand and confirm, by the frame sizes
	// (mprof_fpexact.go) or else with the slow unwinder.
	nfp, stopped := fpLogicalPCs(3, phys, sc.logic[:depth], false)
	if debug.fpunwindcheck == 0 && (nfp == depth || stopped) && fpStackExact(getfp(), gp.stack.lo, hi, phys, sc.recs) {
		if b := stkbucket(memProfile, size, sc.logic[:nfp], false); b != nil {
			memProfStacks.insert(h, phys, size, mode == 1, nil, b, false)
			return b, sp
		}
		return stkbucket(memProfile, size, sc.logic[:nfp], true), sp
	}
	nstk := callers(4, mp.profStack[:depth])
	same := eqslice(sc.logic[:nfp], mp.profStack[:nstk])
	if nfp < depth && !stopped {
		// The chain ended where the slow unwinder would not have.
		same = false
	}
	if debug.fpunwindcheck != 0 {
		fpunwindcheckRecord(fpunwindcheckHeap, gp, sc.logic[:nfp], mp.profStack[:nstk])
	}
	b := stkbucket(memProfile, size, mp.profStack[:nstk], true)
	memProfStacks.insert(h, phys, size, mode == 1, nil, b, !same)
	return b, sp
}

// memProfStackKey is the key of memProfStacks entries that hold a logical
// stack (entry.logic) instead of a bucket: no allocation size is ^0. Their
// users (the lineage profile, which appends the goroutine's ancestry
// before looking the bucket up) must not create the bucket of the stack
// alone, which would then appear in the profile with zero values.
const memProfStackKey = ^uintptr(0)

// mProf_StackFP stores into mp.profStack the stack of the current
// allocation, skipping skip logical frames from the return address into
// its caller (what callers(skip+1, ...) stores when called here), and
// returns its length. It reuses the logical stack remembered for the
// physical one, confirmed once by the slow unwinder as mProf_MallocFP
// confirms its buckets, and creates no bucket.
//
//go:noinline
func mProf_StackFP(mp *m, skip int) int {
	depth := int(debug.profstackdepth) + 2
	dst := mp.profStack[:depth]
	if !memProfFP(mp) {
		return callers(skip+1, dst)
	}
	sc := mp.fpScratch
	gp := getg()
	mode, hi := memProfWalkBounds(mp, gp)
	n, how := fpWalk(getfp(), gp.stack.lo, hi, sc.phys)
	if !memProfWalkOK(how, mode) {
		return callers(skip+1, dst)
	}
	phys := sc.phys[:n]
	h := fpStackHash(phys, memProfStackKey^mode<<1)
	if debug.fpunwindcheck == 0 {
		if e := memProfStacks.lookup(h, phys, memProfStackKey, mode == 1); e != nil {
			if e.slow {
				return callers(skip+1, dst)
			}
			return copy(dst, e.logic())
		}
	}
	nfp, stopped := fpLogicalPCs(skip, phys, sc.logic[:depth], false)
	if debug.fpunwindcheck == 0 && (nfp == depth || stopped) && fpStackExact(getfp(), gp.stack.lo, hi, phys, sc.recs) {
		memProfStacks.insert(h, phys, memProfStackKey, mode == 1, sc.logic[:nfp], nil, false)
		return copy(dst, sc.logic[:nfp])
	}
	nstk := callers(skip+1, dst)
	same := eqslice(sc.logic[:nfp], dst[:nstk]) && (nfp == depth || stopped)
	if debug.fpunwindcheck != 0 {
		fpunwindcheckRecord(fpunwindcheckHeap, gp, sc.logic[:nfp], dst[:nstk])
	}
	memProfStacks.insert(h, phys, memProfStackKey, mode == 1, dst[:nstk], nil, !same)
	return nstk
}
