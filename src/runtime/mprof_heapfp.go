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
//     callers() is run as well. Only if the two agree does the physical
//     stack's entry point to the bucket; otherwise the entry sends it to
//     the slow path for good. A physical stack is thus trusted only after
//     the slow unwinder has confirmed it once.
//
// Entries, like buckets, are never freed. GODEBUG=memprofilefpunwindoff=1
// restores the upstream path, also when set at run time.

package runtime

// memProfStacks maps a physical stack, walked on the system stack or not
// (flag), and an allocation size (key) to a memory profile bucket, or to
// the slow path (see mprof_fpstktab.go).
var memProfStacks = fpStackTab{name: "heap profile alias hash", nbuckets: 1 << 14}

// fpOSStackSlack is how far above g0.stack.hi the frames of a thread's
// root functions may lie on an OS-allocated stack.
const fpOSStackSlack = 1024

// memProfFP reports whether mProf_Malloc should use mProf_MallocFP.
func memProfFP(mp *m) bool {
	return fpProfArch && debug.memprofilefpunwindoff.Load() == 0 && mp.fpScratch != nil && !mp.fpUnwindNeedsCgoTraceback() && !fpUnwindPanicking(mp.curg)
}

// mProf_MallocFP returns the bucket for the current allocation of the given
// size, as mProf_Malloc would find with callers(3, ...). It is called only by
// mProf_Malloc and calls callers(4, ...) itself to skip its own frame, so it
// must not be inlined.
//
//go:noinline
func mProf_MallocFP(mp *m, size uintptr) *bucket {
	sc := mp.fpScratch
	gp := getg()
	var mode uintptr
	if gp != mp.curg {
		mode = 1
	}
	// The first PC is the return address into mProf_Malloc; skipping three
	// logical frames (mProf_Malloc, profilealloc, and the malloc function
	// that called it) matches callers(3) in mProf_Malloc.
	hi := gp.stack.hi
	if mode == 1 && (mp == &m0 || iscgo || mStackIsSystemAllocated()) {
		// An OS-allocated g0 stack's recorded top (see mstart0) lies
		// below the frames of mstart0 and mstart.
		hi += fpOSStackSlack
	}
	n, how := fpWalk(getfp(), gp.stack.lo, hi, sc.phys)
	ok := how == fpWalkEnd || how == fpWalkFull || (how == fpWalkLeft && mode == 1)
	depth := int(debug.profstackdepth) + 2
	if !ok {
		nstk := callers(4, mp.profStack[:depth])
		if debug.fpunwindcheck != 0 {
			nfp, _ := fpLogicalPCs(3, sc.phys[:n], sc.logic[:depth], false)
			fpunwindcheckRecord(fpunwindcheckHeap, gp, sc.logic[:nfp], mp.profStack[:nstk])
		}
		return stkbucket(memProfile, size, mp.profStack[:nstk], true)
	}
	phys := sc.phys[:n]
	h := fpStackHash(phys, size^mode<<1)
	if debug.fpunwindcheck == 0 {
		if e := memProfStacks.lookup(h, phys, size, mode == 1); e != nil {
			if !e.slow {
				return e.bucket
			}
			nstk := callers(4, mp.profStack[:depth])
			return stkbucket(memProfile, size, mp.profStack[:nstk], true)
		}
	}

	// Miss, or fpunwindcheck: expand and confirm with the slow unwinder.
	nfp, stopped := fpLogicalPCs(3, phys, sc.logic[:depth], false)
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
	return b
}
