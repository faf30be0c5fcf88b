// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Frame-pointer unwinding for the goroutine profile.
//
// saveg records a goroutine's logical stack with gentraceback, which costs
// a pcvalue lookup per frame. For a goroutine that is not running, savegFP walks the frame
// pointers from gp.sched.bp (gp.syscallbp in a syscall) instead, and turns
// the physical stack into the logical one through gstkCache, a lock-free
// table from physical to logical stacks shared by all profiles: goroutines
// parked at the same place cost one expansion, and share one record stack.
// A goroutine that has not changed status since the previous profile
// reuses its entry without reading its stack (gFPProfCache): walking
// thousands of stacks is bound by memory latency, not by instructions.
//
// A goroutine takes the slow path when its frame pointers cannot be
// trusted (savegFPState names each state; TestGoroutineProfileFPStates
// covers them):
//
//   - the goroutine calling GoroutineProfile, which is running;
//   - a goroutine stopped by asynchronous preemption (asyncSafePoint): the
//     interrupted function may not have set up its frame yet;
//   - a goroutine stopped in morestack (syncSafePoint): its own frame
//     record does not exist yet;
//   - a goroutine that has not run yet or has no saved frame pointer
//     (sched.bp or syscallbp is 0);
//   - a goroutine locked to an M with cgo frames on its stack (a C-to-Go
//     callback, or an extra M), where the chain runs into C frames;
//   - a walk that leaves the goroutine's stack or does not grow, or a
//     chain that ends where the slow unwinder would not stop.
//
// GODEBUG=goroutineprofilefpunwindoff=1 restores the slow path.

package runtime

import (
	"internal/goarch"
	"internal/profilerecord"
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

// States of a goroutine for savegFP.
const (
	gfpOK  = iota
	gfpOff // disabled by GODEBUG or architecture
	gfpAsyncPreempt
	gfpSyncPreempt
	gfpNoFP    // sched.bp / syscallbp is 0, e.g. not started yet
	gfpCgo     // locked to an M with cgo frames on the stack
	gfpRunning // running and not in a syscall
)

// savegFPState classifies gp for savegFP.
func savegFPState(gp *g) int {
	if !fpProfArch || debug.goroutineprofilefpunwindoff.Load() != 0 {
		return gfpOff
	}
	if gp.syscallsp == 0 && readgstatus(gp)&^_Gscan == _Grunning {
		return gfpRunning
	}
	if gp.asyncSafePoint {
		return gfpAsyncPreempt
	}
	if gp.syncSafePoint {
		return gfpSyncPreempt
	}
	if mp := gp.lockedm.ptr(); mp != nil && mp.hasCgoOnStack() {
		return gfpCgo
	}
	if gp.syscallsp != 0 {
		if gp.syscallbp == 0 {
			return gfpNoFP
		}
	} else if gp.sched.bp == 0 {
		return gfpNoFP
	}
	return gfpOK
}

// gFPProfCache remembers the goroutine profile stack of a goroutine that
// is not running. Every status change of the goroutine increments
// transitions (casgstatus, and coroswitch's direct CAS), and a goroutine
// cannot run without one, so while at == transitions its frames are the ones
// stk was computed from and the profile need not read its stack again.
// Stack copying moves frames but keeps their PCs.
type gFPProfCache struct {
	transitions uint32
	at          uint32
	stk         uintptr // *gstkEntry, in persistent memory; 0 if none
}

// gstkEntry maps a physical stack (nphys PCs) to a logical one (nlogic PCs),
// stored after it in memory.
type gstkEntry struct {
	_        sys.NotInHeap
	next     *gstkEntry
	hash     uintptr
	nphys    uint32
	nlogic   uint32
	syscall  bool
	fallback bool // the walk cannot be trusted: take the slow path
}

func (e *gstkEntry) phys() []uintptr {
	return unsafe.Slice((*uintptr)(add(unsafe.Pointer(e), unsafe.Sizeof(*e))), e.nphys)
}

func (e *gstkEntry) logic() []uintptr {
	return unsafe.Slice((*uintptr)(add(unsafe.Pointer(e), unsafe.Sizeof(*e)+uintptr(e.nphys)*goarch.PtrSize)), e.nlogic)
}

const (
	gstkCacheSize     = 1 << 12
	gstkCacheMaxBytes = 8 << 20 // stop adding entries past this
)

var gstkCache struct {
	tab   atomic.UnsafePointer // *[gstkCacheSize]atomic.UnsafePointer
	bytes atomic.Uintptr
}

// savegFP records gp's stack into r by frame-pointer unwinding, with the
// result saveg's slow path would record into pcbuf. It reports false if gp
// must take the slow path. It runs on the system stack. A nil pcbuf means
// the scheduler is recording gp on its way to run it; then the cache is
// only read, never extended.
func savegFP(gp *g, r *profilerecord.StackRecord, pcbuf []uintptr) bool {
	if savegFPState(gp) != gfpOK {
		return false
	}
	return savegFP1(gp, r, pcbuf)
}

func savegFP1(gp *g, r *profilerecord.StackRecord, pcbuf []uintptr) bool {
	sc := getg().m.fpScratch
	if sc == nil {
		return false
	}
	mayInsert := pcbuf != nil
	if pcbuf == nil {
		// Not sc.logic: the allocation below may be profiled, and the
		// heap profiler uses sc.phys and sc.logic.
		pcbuf = sc.aux[:debug.profstackdepth]
	}
	syscall := gp.syscallsp != 0
	if !syscall && gp.fpprof.stk != 0 && gp.fpprof.at == gp.fpprof.transitions {
		r.Stack = (*gstkEntry)(unsafe.Pointer(gp.fpprof.stk)).logic()
		return true
	}
	phys := sc.phys
	var bp uintptr
	if syscall {
		phys[0], bp = gp.syscallpc, gp.syscallbp
	} else {
		phys[0], bp = gp.sched.pc, gp.sched.bp
	}
	n, how := fpWalk(bp, gp.stack.lo, gp.stack.hi, phys[1:])
	if how != fpWalkEnd && how != fpWalkFull {
		return false
	}
	phys = phys[:n+1]

	var flag uintptr
	if syscall {
		flag = 1
	}
	h := fpStackHash(phys, flag)
	var e *gstkEntry
	tab := (*[gstkCacheSize]atomic.UnsafePointer)(gstkCache.tab.Load())
	if tab != nil {
		for e = (*gstkEntry)(tab[h%gstkCacheSize].Load()); e != nil; e = e.next {
			if e.hash == h && e.syscall == syscall && eqslice(e.phys(), phys) {
				break
			}
		}
	}
	if e == nil {
		nl, stopped := fpExpand(0, phys, pcbuf, syscall)
		logic := pcbuf[:nl]
		// Unless pcbuf is full, the slow unwinder must have stopped within
		// phys: otherwise the chain ended early or the walk was cut.
		fallback := nl < len(pcbuf) && !stopped
		if mayInsert {
			e = gstkCacheInsert(h, phys, logic, syscall, fallback)
		}
		if fallback {
			return false
		}
		if e == nil {
			r.Stack = make([]uintptr, len(logic))
			copy(r.Stack, logic)
			return true
		}
	}
	if e.fallback {
		return false
	}
	if !syscall {
		gp.fpprof.stk = uintptr(unsafe.Pointer(e))
		gp.fpprof.at = gp.fpprof.transitions
	}
	// Records are read-only to their consumers (GoroutineProfile copies
	// them, runtime/pprof reads them), so goroutines parked at the same
	// place share the cached stack, which is never freed or changed.
	// This saves an allocation per goroutine, and the garbage collection
	// it brings, which scans every goroutine's stack.
	r.Stack = e.logic()
	return true
}

// gstkCacheInsert publishes the expansion of phys, or returns nil if the
// cache is full. Entries are immutable once published and pushed with a
// CAS; a racing duplicate is harmless.
func gstkCacheInsert(h uintptr, phys, logic []uintptr, syscall, fallback bool) *gstkEntry {
	if fallback {
		logic = nil
	}
	size := unsafe.Sizeof(gstkEntry{}) + uintptr(len(phys)+len(logic))*goarch.PtrSize
	if gstkCache.bytes.Load()+size > gstkCacheMaxBytes {
		return nil
	}
	tab := (*[gstkCacheSize]atomic.UnsafePointer)(gstkCache.tab.Load())
	if tab == nil {
		tab = (*[gstkCacheSize]atomic.UnsafePointer)(persistentalloc(unsafe.Sizeof(*tab), goarch.PtrSize, &memstats.buckhash_sys))
		if !gstkCache.tab.CompareAndSwapNoWB(nil, unsafe.Pointer(tab)) {
			tab = (*[gstkCacheSize]atomic.UnsafePointer)(gstkCache.tab.Load())
		}
	}
	gstkCache.bytes.Add(size)
	e := (*gstkEntry)(persistentalloc(size, goarch.PtrSize, &memstats.buckhash_sys))
	e.hash = h
	e.nphys = uint32(len(phys))
	e.nlogic = uint32(len(logic))
	e.syscall = syscall
	e.fallback = fallback
	copy(e.phys(), phys)
	copy(e.logic(), logic)
	head := &tab[h%gstkCacheSize]
	for {
		old := head.Load()
		e.next = (*gstkEntry)(old)
		if head.CompareAndSwapNoWB(old, unsafe.Pointer(e)) {
			return e
		}
	}
}
