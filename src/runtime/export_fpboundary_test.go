// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build linux && (amd64 || arm64)

// Hooks for fpboundary_test.go: compare the frame-pointer chain with
// gentraceback at the runtime's stack-switch and entry boundaries.

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

const fpCheckMaxFrames = 512

// fpCheckResult is filled in without allocating, so that the checks can run
// on system stacks and in signal handlers. Its fields are static storage.
type fpCheckResult struct {
	fpPCs, utPCs [fpCheckMaxFrames]uintptr
	nfp, nut     int
	badFP        uintptr // first frame pointer outside the permitted stacks
	unterminated bool    // the frame-pointer chain did not end in fpCheckMaxFrames
}

var fpCheck fpCheckResult

// fpStackOK reports whether fp lies on a stack that a frame-pointer chain
// that starts on the current g may visit: its own, and for a system g the
// stacks of its M's g0, gsignal and curg.
func fpStackOK(fp uintptr) bool {
	gp := getg()
	in := func(s stack) bool { return s.lo <= fp && fp+2*goarch.PtrSize <= s.hi }
	if in(gp.stack) {
		return true
	}
	mp := gp.m
	if in(mp.g0.stack) || (mp.gsignal != nil && in(mp.gsignal.stack)) || (mp.curg != nil && in(mp.curg.stack)) {
		return true
	}
	return false
}

// fpCheckWalk walks from fp, checking each frame pointer before reading it.
func fpCheckWalk(fp uintptr, r *fpCheckResult) {
	r.nfp = 0
	r.badFP = 0
	r.unterminated = false
	for fp != 0 {
		if r.nfp == len(r.fpPCs) {
			r.unterminated = true
			return
		}
		if !fpStackOK(fp) {
			r.badFP = fp
			return
		}
		r.fpPCs[r.nfp] = *(*uintptr)(unsafe.Pointer(fp + goarch.PtrSize))
		fp = fpNextRecord(fp, r.fpPCs[r.nfp])
		r.nfp++
	}
}

// fpCheckUnwind records the return PCs gentraceback finds from the frame
// described by pc, sp, lr (all ^0 for gp's saved state).
func fpCheckUnwind(pc, sp, lr uintptr, gp *g, flags unwindFlags, r *fpCheckResult) {
	var u unwinder
	r.nut = 0
	for u.initAt(pc, sp, lr, gp, flags|unwindSilentErrors); u.valid() && r.nut < len(r.utPCs); u.next() {
		r.utPCs[r.nut] = u.frame.pc
		r.nut++
	}
}

// fpCheckHere compares the chain of the caller of fpCheckHere: the first
// PC of each walk is the return address into that caller.
//
//go:noinline
func fpCheckHere(r *fpCheckResult, flags unwindFlags) {
	a := &fpCheckArgs
	a.fp, a.pc, a.sp, a.gp, a.flags, a.r = uintptr(getfp()), sys.GetCallerPC(), sys.GetCallerSP(), getg(), flags, r
	if a.gp == a.gp.m.curg {
		// Neither walk may run on the stack it walks: it could move.
		systemstack(fpCheckHere1)
	} else {
		fpCheckHere1()
	}
}

var fpCheckArgs struct {
	fp, pc, sp uintptr
	gp         *g
	flags      unwindFlags
	r          *fpCheckResult
}

func fpCheckHere1() {
	a := &fpCheckArgs
	fpCheckWalk(a.fp, a.r)
	fpCheckUnwind(a.pc, a.sp, 0, a.gp, a.flags, a.r)
}

// FPCheck is the result of one comparison, copied out for the test.
type FPCheck struct {
	FP, Unwind   []uintptr
	BadFP        uintptr
	Unterminated bool
}

func (r *fpCheckResult) copyOut() FPCheck {
	return FPCheck{
		FP:           append([]uintptr(nil), r.fpPCs[:r.nfp]...),
		Unwind:       append([]uintptr(nil), r.utPCs[:r.nut]...),
		BadFP:        r.badFP,
		Unterminated: r.unterminated,
	}
}

// FPCheckGoroutine compares the walks on the calling goroutine.
//
//go:noinline
func FPCheckGoroutine() FPCheck {
	fpCheckHere(&fpCheck, 0)
	return fpCheck.copyOut()
}

// FPCheckSystemstack compares the walks from a function running on g0
// through systemstack; both continue on the goroutine's stack.
//
//go:noinline
func FPCheckSystemstack() FPCheck {
	systemstack(func() {
		fpCheckHere(&fpCheck, unwindJumpStack)
	})
	return fpCheck.copyOut()
}

// FPCheckMcall compares the walks from a function running on g0 through
// mcall; both must end at mcall (the goroutine may resume on another M).
//
//go:noinline
func FPCheckMcall() FPCheck {
	mcall(fpCheckMcall)
	return fpCheck.copyOut()
}

func fpCheckMcall(gp *g) {
	fpCheckHere(&fpCheck, 0)
	gogo(&gp.sched)
}

// FPCheckSignal raises SIGUSR1 on the current thread and compares the walks
// in the signal handler (on gsignal): both must end at sigtramp, never
// continuing into the interrupted code's frames.
func FPCheckSignal() FPCheck {
	lockOSThread()
	defer unlockOSThread()
	unblocksig(_SIGUSR1)
	fpCheck.nfp, fpCheck.nut = -1, -1
	testSigusr1 = func(gp *g) bool {
		fpCheckHere(&fpCheck, 0)
		return true
	}
	signalM(getg().m, _SIGUSR1)
	for i := 0; i < 1000000 && fpCheck.nut < 0; i++ {
		osyield()
	}
	testSigusr1 = nil
	if fpCheck.nut < 0 {
		return FPCheck{Unterminated: true}
	}
	return fpCheck.copyOut()
}

// FPCheckStopped stops gp (which must not be the caller) at a safe point
// the way the garbage collector does (asynchronous or synchronous
// preemption, or a syscall) and compares the frame-pointer walk the
// execution tracer makes from gp's saved state with gentraceback's.
// It reports whether gp was stopped by asynchronous preemption and
// whether it was in a syscall.
func FPCheckStopped(gp *G) (r FPCheck, async, insyscall bool) {
	userG := getg()
	systemstack(func() {
		// As a GC mark worker does, so that suspendG cannot deadlock.
		casGToWaitingForSuspendG(userG, _Grunning, waitReasonGarbageCollection)
		defer casgstatus(userG, _Gwaiting, _Grunning)
		state := suspendG(gp)
		if state.dead {
			resumeG(state)
			return
		}
		insyscall = gp.syscallsp != 0
		async = gp.asyncSafePoint
		fpCheck.nfp, fpCheck.badFP, fpCheck.unterminated = 0, 0, false
		var first [2]uintptr
		nfirst := 0
		var fp uintptr
		// The starting points are those of traceStack's fast path.
		if insyscall {
			first[0], nfirst, fp = gp.syscallpc, 1, gp.syscallbp
		} else if gp.syncSafePoint {
			first[0], nfirst, fp = gp.sched.pc, 2, gp.sched.bp
			if usesLR {
				first[1] = gp.sched.lr
			} else {
				first[1] = *(*uintptr)(unsafe.Pointer(gp.sched.sp))
			}
		} else {
			first[0], nfirst, fp = gp.sched.pc, 1, gp.sched.bp
		}
		fpCheckStoppedWalk(gp, fp, &fpCheck)
		copy(fpCheck.fpPCs[nfirst:], fpCheck.fpPCs[:fpCheck.nfp])
		copy(fpCheck.fpPCs[:], first[:nfirst])
		fpCheck.nfp += nfirst
		fpCheckUnwind(^uintptr(0), ^uintptr(0), ^uintptr(0), gp, 0, &fpCheck)
		// Copy out (allocate) only after resumeG has dropped gp's scan
		// bit, under which no lock that allocation takes may be taken.
		resumeG(state)
		r = fpCheck.copyOut()
	})
	return
}

// fpCheckStoppedWalk is fpCheckWalk restricted to gp's stack.
func fpCheckStoppedWalk(gp *g, fp uintptr, r *fpCheckResult) {
	for fp != 0 {
		if r.nfp+2 >= len(r.fpPCs) {
			r.unterminated = true
			return
		}
		if fp < gp.stack.lo || fp+2*goarch.PtrSize > gp.stack.hi {
			r.badFP = fp
			return
		}
		r.fpPCs[r.nfp] = *(*uintptr)(unsafe.Pointer(fp + goarch.PtrSize))
		fp = fpNextRecord(fp, r.fpPCs[r.nfp])
		r.nfp++
	}
}

// FPCheckFuncName names the function containing the return address pc.
func FPCheckFuncName(pc uintptr) string {
	f := findfunc(pc - 1)
	if !f.valid() {
		return "?"
	}
	return funcname(f)
}

// FPCheckIsFrameless reports whether the function containing the
// interrupted PC pc keeps no frame pointer (a frameless leaf), so that a
// frame-pointer walk cannot see its caller's return address.
func FPCheckIsFrameless(pc uintptr) bool {
	f := findfunc(pc)
	return f.valid() && funcMaxSPDelta(f) == 0
}

// FPCheckAllGs runs FPCheckStopped on every live goroutine but the caller,
// system goroutines included (go.dev/issue/63630).
func FPCheckAllGs(check func(goid uint64, sys bool, r FPCheck)) {
	var gps []*g
	forEachG(func(gp *g) {
		if gp != getg() && readgstatus(gp) != _Gdead {
			gps = append(gps, gp)
		}
	})
	for _, gp := range gps {
		r, _, _ := FPCheckStopped(gp)
		check(gp.goid, isSystemGoroutine(gp, false), r)
	}
}

// SetTraceFPUnwindOff sets GODEBUG=tracefpunwindoff and returns the old value.
func SetTraceFPUnwindOff(v int32) int32 {
	old := debug.tracefpunwindoff
	debug.tracefpunwindoff = v
	return old
}

// SetAsyncPreemptOff sets GODEBUG=asyncpreemptoff and returns the old value.
//
// The runtime otherwise reads the setting only at startup. A preemption
// signal sent before a change to 1 and received after it is not
// acknowledged: its M's signalPending stays set, so preemptM never signals
// that M again, and a goroutine running there that only asynchronous
// preemption can stop (a loop without stack-bound checks) can never be
// suspended once the setting is back to 0. So each change clears
// signalPending on every M; a signal that was still on its way is then
// acknowledged by the handler or ignored, and a second one is harmless.
func SetAsyncPreemptOff(v int32) int32 {
	old := debug.asyncpreemptoff
	debug.asyncpreemptoff = v
	for mp := (*m)(atomic.Loadp(unsafe.Pointer(&allm))); mp != nil; mp = mp.alllink {
		mp.signalPending.Store(0)
	}
	return old
}

// FPCheckPreemptSignalOff signals the calling thread for preemption while
// asynchronous preemption is off (the handler then leaves the signal
// unacknowledged), turns it back on with SetAsyncPreemptOff, and reports
// whether the thread's M is still marked as having a signal pending, which
// would keep preemptM from ever signalling it again.
func FPCheckPreemptSignalOff() (stillPending bool) {
	lockOSThread()
	defer unlockOSThread()
	old := SetAsyncPreemptOff(1)
	mp := getg().m
	preemptM(mp) // a signal to the own thread arrives before tgkill returns
	SetAsyncPreemptOff(0)
	stillPending = mp.signalPending.Load() != 0
	SetAsyncPreemptOff(old)
	return stillPending
}

// FPCheckNanotime is nanotime, for loops that must not gain a stack-bound
// check (a synchronous safe point) by reading the clock.
//
//go:nosplit
func FPCheckNanotime() int64 { return nanotime() }

// AsyncPreemptFPReadyAt is the frame-record rule of asynchronous
// preemption (preemptfp.go) for a function interrupted at pc, sp, fp.
func AsyncPreemptFPReadyAt(pc, sp, fp uintptr) bool { return asyncPreemptFPReadyAt(pc, sp, fp) }

// FPCheckEachPC calls fn for every instruction-aligned PC of the function
// whose entry is entry, with the SP delta the pcsp table gives there.
func FPCheckEachPC(entry uintptr, fn func(pc uintptr, delta int32)) {
	f := findfunc(entry)
	if !f.valid() || f.entry() != entry {
		panic("FPCheckEachPC: not a function entry")
	}
	p := f.datap.pctab[f.pcsp:]
	pc, val := f.entry(), int32(-1)
	for {
		start := pc
		var ok bool
		p, ok = step(p, &pc, &val, pc == f.entry())
		if !ok {
			return
		}
		for q := start; q < pc; q += sys.PCQuantum {
			fn(q, val)
		}
	}
}

// FPCheckMaxSPDelta returns the largest SP delta of the function whose
// entry is entry.
func FPCheckMaxSPDelta(entry uintptr) int32 { return funcMaxSPDelta(findfunc(entry)) }

// CgoLinkWalk is cgoLinkWalk, which checks the C frame records between a
// cgo callback and its cgocall site.
func CgoLinkWalk(fp, want, lo, hi uintptr) uintptr { return cgoLinkWalk(fp, want, lo, hi) }

const CgoLinkMaxRecords = cgoLinkMaxRecords
