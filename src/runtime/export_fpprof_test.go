// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the frame-pointer profiling tests (mprof_fp_test.go).

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// SetFPUnwindCheck turns GODEBUG=fpunwindcheck on or off and returns the
// previous setting.
func SetFPUnwindCheck(on bool) bool {
	old := debug.fpunwindcheck != 0
	debug.fpunwindcheck = 0
	if on {
		debug.fpunwindcheck = 1
	}
	return old
}

// FPUnwindCheckCounts returns the fpunwindcheck counters of a site.
func FPUnwindCheckCounts(site string) (checked, mismatches uint64) {
	for i, name := range fpunwindcheckSiteNames {
		if name == site {
			return fpunwindcheckStats.checked[i].Load(), fpunwindcheckStats.mismatches[i].Load()
		}
	}
	panic("unknown fpunwindcheck site " + site)
}

// FPUnwindCheckInject makes the next fpunwindcheck comparison see an altered
// frame-pointer result.
func FPUnwindCheckInject() { fpunwindcheckStats.inject.Store(1) }

// GoroutineFPState reports how savegFP classifies the goroutine with the
// given id ("" if there is none), with the world stopped.
func GoroutineFPState(goid uint64) string {
	state := ""
	stw := stopTheWorld(stwForTestResetDebugLog)
	forEachG(func(gp *g) {
		if gp.goid == goid {
			state = goroutineFPStateName(gp)
		}
	})
	startTheWorld(stw)
	return state
}

// GoroutineFPStateOf is GoroutineFPState for the live goroutine started
// with the function fn ("" if there is none, "many" if several).
func GoroutineFPStateOf(fn func()) string {
	pc := **(**uintptr)(unsafe.Pointer(&fn))
	state := ""
	stw := stopTheWorld(stwForTestResetDebugLog)
	forEachG(func(gp *g) {
		if gp.startpc == pc && readgstatus(gp) != _Gdead {
			if state != "" {
				state = "many"
			} else {
				state = goroutineFPStateName(gp)
			}
		}
	})
	startTheWorld(stw)
	return state
}

func goroutineFPStateName(gp *g) string {
	state := ""
	{
		switch savegFPState(gp) {
		case gfpOK:
			state = "ok"
		case gfpOff:
			state = "off"
		case gfpAsyncPreempt:
			state = "asyncpreempt"
		case gfpSyncPreempt:
			state = "syncpreempt"
		case gfpNoFP:
			state = "nofp"
		case gfpCgo:
			state = "cgo"
		case gfpRunning:
			state = "running"
		case gfpPanicking:
			state = "panicking"
		}
	}
	return state
}

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

var gfpHoldTestRan atomic.Bool

// GoroutineProfileHoldStack parks a goroutine, takes hold of its stack as
// the goroutine profile's walk does (gfpHoldStack), and has another
// goroutine wake it. It reports whether the hold took the scan bit, and
// whether the goroutine ran while held and after the release.
func GoroutineProfileHoldStack() (scanBit, ranWhileHeld, ranAfter bool) {
	ch := make(chan struct{})
	started := make(chan *g)
	ran := &gfpHoldTestRan
	ran.Store(false)
	go func() {
		started <- getg()
		<-ch
		ran.Store(true)
	}()
	gp := <-started
	for readgstatus(gp) != _Gwaiting {
		Gosched()
	}
	var held uint32
	systemstack(func() { held = gfpHoldStack(gp) })
	scanBit = held == _Gwaiting && readgstatus(gp) == _Gscanwaiting
	go close(ch) // waits in casgstatus while the scan bit is held
	usleep(20000)
	ranWhileHeld = ran.Load()
	if held != 0 {
		systemstack(func() { casfrom_Gscanstatus(gp, held|_Gscan, held) })
	}
	for range 1000 {
		if ran.Load() {
			break
		}
		usleep(1000)
	}
	return scanBit, ranWhileHeld, ran.Load()
}
