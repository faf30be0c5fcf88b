// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Goroutine lineage in the runtime's profiles (GODEBUG lineageprofile=1).
//
// A worker's CPU time and allocations are charged to the worker's own stack,
// which ends at runtime.goexit: the function that started the worker, and
// everything up its creation chain, gets nothing (go.dev/issue/32223,
// go.dev/issue/16894). With lineageprofile=1 the CPU, heap (allocs),
// block, mutex and goroutine profiles continue each stack that ends at
// runtime.goexit with the goroutine's creation ancestry, as ordinary frames:
//
//   - the goroutine's own go statement: its lineage record's creation stack
//     when GODEBUG lineagestack>0 recorded one (its first PC is the go
//     statement's gopc), otherwise the gopc alone;
//   - then each ancestor's go statement (its gopc), parent first, up to
//     GODEBUG lineage ancestors, stopping at the main goroutine.
//
// A gopc is the return address of the call to newproc, so pprof symbolizes
// it as the creator function at the line of the go statement, with inlined
// frames expanded, like any other frame. `go tool pprof -top -cum` then
// charges a worker to every function up its creation chain. The order and
// the PCs are those of misc/golineage's stitched profiles, which label the
// go statement's frame "created by F" instead of F.
//
// The ancestry is read from the goroutine's lineage record (lineage.go),
// which its creator wrote before it first ran and whose fields read here
// do not change while it lives: so the CPU profiler reads it from the signal handler
// (sigprof: no locks, no allocation, at most 2*lineageMaxLimit words). A
// stack that does not end at runtime.goexit (cut at the depth limit,
// walked on a system stack, a goroutine without a go statement) gets no
// ancestry, and the ancestry is cut to keep the whole within the profile's
// depth limit (maxCPUProfStack, debug.profstackdepth): the ancestry is
// truncated first, the goroutine's own frames never.
//
// The heap profiler, with the setting on, takes the allocation's stack
// from the frame-pointer profiler's table of logical stacks (mprof_heapfp.go)
// and creates only the bucket of that stack followed by the ancestry
// (mProf_MallocLineage), so the heap profile never lists the plain stack
// with zero values beside it.
//
// The hooks in upstream files (sigprof, mProf_Malloc, saveblockevent,
// mLockProfile.captureStack, saveg) check the setting inline: when it is
// off, sigprof pays a load, a test, a branch not taken and a jump per
// sample (TestLineageProfileHookCost), the others a load and a branch per
// sample or record. Execution traces, whose CPU samples share sigprof's
// stack, keep upstream's stacks. runtime/pprof leaves runtime.goexit out
// of the profiles it writes, so there the ancestry directly follows the
// function the goroutine started with.
//
// The "goroutinecreate" profile (runtime/pprof) counts live goroutines by
// the same ancestry, the creation site first, whatever lineageprofile says.
// With GODEBUG lineage=0 there are no records and each goroutine counts at
// its gopc alone. Goroutines without a go statement (the main goroutine,
// cgo callbacks, system goroutines) are left out.

package runtime

import (
	"internal/abi"
	"internal/profilerecord"
	"internal/runtime/atomic"
	"internal/runtime/sys"
	_ "unsafe" // for go:linkname
)

// lineageProfMax bounds the ancestry of one stack: a creation stack and
// one gopc per ancestor.
const lineageProfMax = 2 * lineageMaxLimit

// lineageProfGoexitPC is the PC a stack that ends at runtime.goexit ends
// with, as newproc1 plants it (physical and logical stacks alike).
func lineageProfGoexitPC() uintptr {
	return abi.FuncPCABI0(goexit) + sys.PCQuantum
}

// lineageAncestry stores gp's creation ancestry in buf, outermost last, and
// returns how many PCs it stored. It reads gp's record without locks, so
// its caller must know that the record is not being rewritten (gp is
// running on this thread, or is stopped and cannot exit): see
// lineageCreationSite for the other case. It does not allocate.
//
//go:nosplit
func lineageAncestry(gp *g, buf []uintptr) int {
	if gp == nil {
		return 0
	}
	r := gp.lineage
	if r == nil || r.goid != gp.goid || r.goid == 1 || r.site.gopc == 0 || r.flags&lineageCgoCallback != 0 {
		return 0
	}
	n := 0
	if nstk := min(uint32(r.nstk), lineageStack); nstk > 0 {
		st := r.stack()
		for i := uint32(0); i < nstk && n < len(buf); i++ {
			buf[n] = uintptr(st[i])
			n++
		}
	} else if n < len(buf) {
		buf[n] = lineageTextPC(r.site.gopc)
		n++
	}
	ancs := r.ancs()
	for i := uint32(0); i < min(uint32(r.nanc), lineageDepth) && n < len(buf); i++ {
		a := &ancs[i]
		if a.start == lineageMainStart || a.gopc == 0 {
			// The main goroutine, or one the runtime started (or
			// out of the text's reach), ends the chain.
			break
		}
		buf[n] = lineageTextPC(a.gopc)
		n++
	}
	return n
}

// lineageProfAppend appends gp's ancestry to stk[:n] if stk[:n] ends at
// runtime.goexit, keeping the result within limit PCs (and len(stk)). It
// returns the new length.
//
//go:nosplit
func lineageProfAppend(gp *g, stk []uintptr, n, limit int) int {
	if n == 0 || n >= len(stk) || stk[n-1] != lineageProfGoexitPC() {
		return n
	}
	limit = min(limit, len(stk))
	if n >= limit {
		return n
	}
	return n + lineageAncestry(gp, stk[n:limit])
}

// lineageProfCPUAppend returns the length of the CPU profile sample's
// stack stk[:n] with the ancestry of the goroutine on gp's M appended.
// sigprof calls it when lineageprofile is set (a load and a branch when it
// is not, which TestLineageProfileHookCost checks). Called in signal
// context: no allocation, no locks.
//
//go:nosplit
func lineageProfCPUAppend(gp *g, stk *[maxCPUProfStack]uintptr, n int) int {
	if gp != nil && gp.m != nil && gp.m.curg != nil {
		gp = gp.m.curg
	}
	return lineageProfAppend(gp, stk[:], n, maxCPUProfStack)
}

// mProf_MallocLineage returns the bucket of the current allocation of the
// given size when GODEBUG=lineageprofile=1: the allocation's stack, as
// mProf_Malloc's callers(3, ...) records it, with the goroutine's creation
// ancestry appended. Only that bucket is created: the stack alone is taken
// from mProf_StackFP's table of logical stacks, not from a bucket, so the
// heap profile holds no zero-valued bucket for the stack without its
// ancestry. It is called only by mProf_Malloc and must not be inlined
// (mProf_StackFP skips its frame).
//
//go:noinline
func mProf_MallocLineage(mp *m, size uintptr) *bucket {
	// Skip mProf_MallocLineage, mProf_Malloc, profilealloc and the malloc
	// function.
	n := mProf_StackFP(mp, 4)
	n = lineageProfAppend(mp.curg, mp.profStack, n, int(debug.profstackdepth))
	return stkbucket(memProfile, size, mp.profStack[:n], true)
}

// lineageProfBlock is the hook of saveblockevent and of the runtime-lock
// contention profiler (mLockProfile.captureStack): it returns the length
// of the block or mutex event's stack stk[:n] with the ancestry of gp (the
// goroutine that blocked or unlocked) appended.
func lineageProfBlock(gp *g, stk []uintptr, n int) int {
	if debug.lineageprofile.Load() == 0 {
		return n
	}
	return lineageProfAppend(gp, stk, n, int(debug.profstackdepth))
}

// lineageProfSaveg is saveg's hook: it appends gp's ancestry to the
// goroutine profile record r. gp is stopped for the profile (or is the
// caller), so its record is stable.
func lineageProfSaveg(gp *g, r *profilerecord.StackRecord) {
	if debug.lineageprofile.Load() == 0 {
		return
	}
	lineageProfSavegAppend(gp, r)
}

func lineageProfSavegAppend(gp *g, r *profilerecord.StackRecord) {
	var buf [lineageProfMax]uintptr
	n := len(r.Stack)
	if n == 0 || r.Stack[n-1] != lineageProfGoexitPC() || n >= int(debug.profstackdepth) {
		return
	}
	k := lineageAncestry(gp, buf[:min(len(buf), int(debug.profstackdepth)-n)])
	if k == 0 {
		return
	}
	stk := make([]uintptr, n+k)
	copy(stk, r.Stack)
	copy(stk[n:], buf[:k])
	r.Stack = stk
}

// lineageCreationSite stores in buf the creation ancestry of gp, a
// goroutine that may exit and whose g struct may be reused meanwhile, and
// returns how many PCs it stored: the record is read between two reads of
// its sequence counter, and gp.gopc stands in for it when there is no
// consistent record (lineage=0).
func lineageCreationSite(gp *g, buf []uintptr) int {
	goid := gp.goid
	if r := gp.lineage; r != nil && lineageMode != lineageModeOff {
		for try := 0; try < 4; try++ {
			s := atomic.Load64(&r.seq)
			if s&1 != 0 {
				continue
			}
			n := lineageAncestry(gp, buf)
			if atomic.Load64(&r.seq) == s && r.goid == goid {
				return n
			}
		}
	}
	if gp.gopc == 0 || goid == 1 || len(buf) == 0 {
		return 0
	}
	buf[0] = gp.gopc
	return 1
}

// goroutineCreateProfile calls fn with the creation ancestry of every live
// user goroutine that has one, and returns how many there were.
func goroutineCreateProfile(fn func(stk []uintptr)) int {
	buf := make([]uintptr, lineageProfMax)
	n := 0
	forEachGRace(func(gp *g) {
		if readgstatus(gp) == _Gdead || isSystemGoroutine(gp, false) {
			return
		}
		k := lineageCreationSite(gp, buf)
		if k == 0 || readgstatus(gp) == _Gdead {
			return
		}
		fn(buf[:k])
		n++
	})
	return n
}

// pprof_goroutineCreateInternal fills p with the goroutinecreate profile.
// ok is false (and n the number of records wanted) when p is too short.
//
//go:linkname pprof_goroutineCreateInternal
func pprof_goroutineCreateInternal(p []profilerecord.StackRecord) (n int, ok bool) {
	i := 0
	n = goroutineCreateProfile(func(stk []uintptr) {
		if i < len(p) {
			p[i].Stack = append([]uintptr(nil), stk...)
		}
		i++
	})
	return n, n <= len(p)
}
