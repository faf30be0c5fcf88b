// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the tests of the goroutine profile's frame-pointer path
// (mprof_goroutinefp_test.go).

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

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

var gfpHoldTestRan atomic.Bool

// gfpHoldTestClose tells GoroutineProfileHoldStack's closing goroutine to
// close its channel.
var gfpHoldTestClose atomic.Bool

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
	// The goroutine that closes ch waits in casgstatus while the scan
	// bit is held. It is started first: a go statement allocates, which
	// must not happen under a scan bit (GOEXPERIMENT=staticlockranking).
	closeNow := &gfpHoldTestClose
	closeNow.Store(false)
	go func() {
		for !closeNow.Load() {
			usleep(100)
		}
		close(ch)
	}()
	var held uint32
	systemstack(func() { held = gfpHoldStack(gp) })
	scanBit = held == _Gwaiting && readgstatus(gp) == _Gscanwaiting
	closeNow.Store(true)
	usleep(20000)
	ranWhileHeld = ran.Load()
	if held != 0 {
		systemstack(func() { casfrom_Gscanstatus(gp, held|_Gscan, held) })
	}
	// Yield while waiting: the closer, or the goroutine it wakes, may be
	// queued on this P, and this loop is runtime code, which is not
	// preempted.
	for range 1000 {
		if ran.Load() {
			break
		}
		Gosched()
		usleep(1000)
	}
	return scanBit, ranWhileHeld, ran.Load()
}
