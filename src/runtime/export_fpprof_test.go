// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the frame-pointer profiling tests (mprof_fp_test.go).

package runtime

import "unsafe"

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
