// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Frame-pointer unwinding for the goroutine profile.
//
// saveg records a goroutine's logical stack with gentraceback, which costs
// a pcvalue lookup per frame. For a goroutine that is not running, savegFP walks the frame
// pointers from gp.sched.bp (gp.syscallbp in a syscall) instead, and turns
// the physical stack into the logical one through goroutineProfStacks, a
// lock-free table from physical to logical stacks shared by all profiles
// (mprof_fpstktab.go): goroutines parked at the same place cost one
// expansion, and share one record stack.
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
//     callback) when a cgo traceback function is registered, which adds C
//     frames the walk cannot see (fpUnwindNeedsCgoTraceback, the predicate
//     every frame-pointer unwinder uses; without one, the callback's chain
//     links to the cgocall site or ends, as gentraceback does);
//   - a panicking goroutine, whose stack may hold a frameless leaf that
//     faulted (fpunwindpanic.go);
//   - a walk that leaves the goroutine's stack or does not grow, or a
//     chain that ends where the slow unwinder would not stop.
//
// The walk holds the goroutine's scan bit (gfpHoldStack), so that the
// garbage collector cannot shrink the stack under it.
//
// GODEBUG=goroutineprofilefpunwindoff=1 restores the slow path.

package runtime

import (
	"internal/cpu"
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
	gfpNoFP      // sched.bp / syscallbp is 0, e.g. not started yet
	gfpCgo       // locked to an M whose cgo frames a cgo traceback function may expand
	gfpRunning   // running and not in a syscall
	gfpPanicking // panicking: a frameless leaf may have faulted (fpunwindpanic.go)
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
	if gp.lockedm.ptr().fpUnwindNeedsCgoTraceback() {
		return gfpCgo
	}
	if fpUnwindPanicking(gp) {
		return gfpPanicking
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
	stk         uintptr // *fpStackEntry, in persistent memory; 0 if none
}

// goroutineProfStacks maps a physical stack, walked from a syscall or not
// (flag), to its logical stack or to the slow path (see mprof_fpstktab.go).
// Its entries take at most 8 MiB; past that, stacks are expanded afresh.
var goroutineProfStacks = fpStackTab{name: "goroutine profile stack hash", nbuckets: 1 << 12, maxBytes: 8 << 20}

// savegFP records gp's stack into r by frame-pointer unwinding, with the
// result saveg's slow path would record into pcbuf. It reports false if gp
// must take the slow path. It runs on the system stack. A nil pcbuf means
// the scheduler is recording gp on its way to run it; then the cache is
// only read, never extended.
func savegFP(gp *g, r *profilerecord.StackRecord, pcbuf []uintptr) bool {
	if savegFPState(gp) != gfpOK {
		return false
	}
	held := gfpHoldStack(gp)
	ok, unshared := savegFP1(gp, r, pcbuf)
	if debug.fpunwindcheck != 0 {
		if sc := getg().m.fpScratch; sc != nil {
			var u unwinder
			u.initAt(^uintptr(0), ^uintptr(0), 0, gp, unwindSilentErrors)
			n := tracebackPCs(&u, 0, sc.slow[:debug.profstackdepth])
			var fp []uintptr // a rejected walk counts as a mismatch
			if ok {
				fp = r.Stack
				if unshared != nil {
					fp = unshared
				}
			}
			fpunwindcheckRecord(fpunwindcheckGoroutine, gp, fp, sc.slow[:n])
		}
	}
	if held != 0 {
		casfrom_Gscanstatus(gp, held|_Gscan, held)
	}
	if ok && unshared != nil {
		// Allocated only now: under gp's scan bit, an allocation's mark
		// assist could wait for that bit to scan gp's stack.
		r.Stack = make([]uintptr, len(unshared))
		copy(r.Stack, unshared)
	}
	return ok
}

// gfpHoldStack keeps gp's stack from moving while the profile reads it.
// The concurrent goroutine profile reads goroutines that are not running
// while the garbage collector runs, and the collector shrinks (copies) the
// stacks it scans. So gfpHoldStack takes gp's scan bit, as the collector
// does before it scans or shrinks a stack, waiting while the collector
// holds it. It returns the status whose scan bit it took, for the caller
// to release with casfrom_Gscanstatus, or 0 for a goroutine in a syscall,
// whose stack is never shrunk (isShrinkStackSafe) and whose frames below
// syscallbp stay put until exitsyscall passes tryRecordGoroutineProfile.
func gfpHoldStack(gp *g) uint32 {
	for {
		switch s := readgstatus(gp); s {
		case _Gwaiting, _Grunnable, _Gleaked:
			if castogscanstatus(gp, s, s|_Gscan) {
				return s
			}
		case _Gscanwaiting, _Gscanrunnable, _Gscanleaked:
			procyield(10) // the collector is scanning gp
		default:
			return 0
		}
	}
}

// savegFP1 is savegFP with gp's stack held. A stack that is not in
// goroutineProfStacks is returned in unshared (in pcbuf or the M's
// scratch space), for savegFP to copy into r once it has released gp.
func savegFP1(gp *g, r *profilerecord.StackRecord, pcbuf []uintptr) (ok bool, unshared []uintptr) {
	sc := getg().m.fpScratch
	if sc == nil {
		return false, nil
	}
	mayInsert := pcbuf != nil
	if pcbuf == nil {
		// Not sc.logic: the allocation below may be profiled, and the
		// heap profiler uses sc.phys and sc.logic.
		pcbuf = sc.aux[:debug.profstackdepth]
	}
	syscall := gp.syscallsp != 0
	if !syscall && gp.fpprof.stk != 0 && gp.fpprof.at == gp.fpprof.transitions {
		r.Stack = (*fpStackEntry)(unsafe.Pointer(gp.fpprof.stk)).logic()
		return true, nil
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
		return false, nil
	}
	phys = phys[:n+1]

	var flag uintptr
	if syscall {
		flag = 1
	}
	h := fpStackHash(phys, flag)
	e := goroutineProfStacks.lookup(h, phys, 0, syscall)
	if e == nil {
		nl, stopped := fpLogicalPCs(0, phys, pcbuf, syscall)
		logic := pcbuf[:nl]
		// Unless pcbuf is full, the slow unwinder must have stopped within
		// phys: otherwise the chain ended early or the walk was cut.
		fallback := nl < len(pcbuf) && !stopped
		if mayInsert {
			if fallback {
				logic = nil
			}
			e = goroutineProfStacks.insert(h, phys, 0, syscall, logic, nil, fallback)
		}
		if fallback {
			return false, nil
		}
		if e == nil {
			return true, logic
		}
	}
	if e.slow {
		return false, nil
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
	return true, nil
}

// fpProfPrefetchAhead is how many goroutines ahead of the one being
// recorded forEachGProfile prefetches. A goroutine that moved costs about
// a dozen cache lines from beyond L1 (its g, its frames, its record),
// most of them dependent loads; prefetching the g several goroutines
// ahead, and its saved frame once that g has arrived, overlaps them.
const fpProfPrefetchAhead = 16

// fpProfPrefetchStack is how many bytes of a goroutine's stack above its
// saved frame pointer forEachGProfile prefetches.
const fpProfPrefetchStack = 1024

// forEachGProfile is forEachGRace for the goroutine profile's pass that
// records every goroutine, in an order that waits less on memory and on the collector:
//
//   - it prefetches the lines of the g structs that tryRecordGoroutineProfile
//     and savegFP read, fpProfPrefetchAhead goroutines ahead, and the top of
//     the saved frame-pointer chain of the goroutine half as far ahead, whose
//     g has arrived by then, if it ran since the previous profile (otherwise
//     savegFP1 reuses its cached stack). Prefetches never fault, so racing with the
//     goroutines (a g that runs, a frame pointer that is stale) costs only a
//     useless prefetch;
//   - a goroutine whose scan bit the garbage collector holds (it is
//     scanning or shrinking the stack) is put off until the end of the
//     pass, when the collector is most likely done with it, rather than
//     waited for (gfpHoldStack spins). At most len(later) are put off at
//     once; fn sees every goroutine once either way.
func forEachGProfile(fn func(gp *g)) {
	ptr, length := atomicAllG()
	var later [32]*g
	nlater := 0
	for i := uintptr(0); i < length; i++ {
		if j := i + fpProfPrefetchAhead; j < length {
			// From the address alone: &gp.sched would make the
			// compiler check gp for nil with a load, a cache miss
			// that stalls the pass.
			p := uintptr(unsafe.Pointer(atomicAllGIndex(ptr, j)))
			sys.Prefetch(p + unsafe.Offsetof(g{}.sched))
			sys.Prefetch(p + unsafe.Offsetof(g{}.sched) + unsafe.Offsetof(gobuf{}.bp))
			sys.Prefetch(p + unsafe.Offsetof(g{}.lockedm))
			// Lines the pass writes (prefetchw.go): the scan bit
			// and status, the profile state, the stack cache.
			prefetchWrite3(p+unsafe.Offsetof(g{}.atomicstatus), p+unsafe.Offsetof(g{}.goroutineProfiled), p+unsafe.Offsetof(g{}.fpprof))
		}
		if j := i + fpProfPrefetchAhead/2; j < length {
			gp := atomicAllGIndex(ptr, j)
			// The frames a walk reads lie between sched.bp and the
			// top of the stack, in order: the first few lines of them,
			// unless the goroutine has not run since the previous
			// profile, whose stack savegFP1 does not read.
			if bp, hi := gp.sched.bp, gp.stack.hi; bp != 0 && bp < hi && gp.fpprof.at != gp.fpprof.transitions {
				end := min(hi, bp+fpProfPrefetchStack)
				for a := bp &^ (cpu.CacheLinePadSize - 1); a < end; a += cpu.CacheLinePadSize {
					sys.Prefetch(a)
				}
			}
		}
		gp := atomicAllGIndex(ptr, i)
		if readgstatus(gp)&_Gscan != 0 && nlater < len(later) {
			later[nlater] = gp
			nlater++
			continue
		}
		fn(gp)
	}
	for _, gp := range later[:nlater] {
		fn(gp)
	}
}

// forEachGProfileClear is the goroutine profile's last pass over allgs,
// which restores goroutineProfileAbsent in every g. It touches one line
// of each g, which it prefetches fpProfPrefetchAhead goroutines ahead.
func forEachGProfileClear() {
	ptr, length := atomicAllG()
	for i := uintptr(0); i < length; i++ {
		if j := i + fpProfPrefetchAhead; j < length {
			prefetchWrite(uintptr(unsafe.Pointer(&atomicAllGIndex(ptr, j).goroutineProfiled)))
		}
		atomicAllGIndex(ptr, i).goroutineProfiled.Store(goroutineProfileAbsent)
	}
}

// goroutineProfRecs keeps GoroutineProfile's record slice from one call
// for the next. Each call needs one record per goroutine (24 bytes on
// 64-bit) only until it has copied them into the caller's StackRecords;
// allocated afresh, 10,000 goroutines make 240 KB of garbage a call, and
// the collector's assist charges that allocation while the collector
// scans every goroutine's stack, which cost the call more than its walk
// of the stacks (doc/profiling-fp.md). A call takes the slice, or
// allocates one if it is missing or too short (another call holds it, or
// there are more goroutines), and puts it back cleared, so it keeps no
// stack alive.
var goroutineProfRecs atomic.Pointer[goroutineProfRecBuf]

type goroutineProfRecBuf struct {
	recs []profilerecord.StackRecord
}

// goroutineProfRecsGet returns n records for GoroutineProfile, all zero.
func goroutineProfRecsGet(n int) *goroutineProfRecBuf {
	for {
		b := goroutineProfRecs.Load()
		if b == nil || cap(b.recs) < n {
			return &goroutineProfRecBuf{recs: make([]profilerecord.StackRecord, n)}
		}
		if goroutineProfRecs.CompareAndSwap(b, nil) {
			b.recs = b.recs[:n]
			return b
		}
	}
}

// goroutineProfRecsPut clears b and keeps it for the next call, unless a
// longer one is kept.
func goroutineProfRecsPut(b *goroutineProfRecBuf) {
	clear(b.recs)
	for {
		old := goroutineProfRecs.Load()
		if old != nil && cap(old.recs) >= cap(b.recs) {
			return
		}
		if goroutineProfRecs.CompareAndSwap(old, b) {
			return
		}
	}
}
