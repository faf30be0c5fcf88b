// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the frame-pointer profiling tests (mprof_fp_test.go).

package runtime

import (
	"internal/goarch"
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

// FPStackExactHere walks its caller's stack as the heap profiler does and
// reports whether fpStackExact confirms the walk, with the logical stack
// fpLogicalPCs makes of it and the stack callers() records, both starting
// at the caller. With alter, the cached frame size of the innermost frame
// is made 8 bytes too large for the confirmation, which must then fail.
//
//go:noinline
func FPStackExactHere(alter bool) (exact bool, fp, slow []uintptr) {
	gp := getg()
	phys := make([]uintptr, 128)
	recs := make([]uintptr, 128)
	logic := make([]uintptr, 128)
	slow = make([]uintptr, 128)
	n, how := fpWalk(getfp(), gp.stack.lo, gp.stack.hi, phys)
	if how != fpWalkEnd {
		return false, nil, nil
	}
	phys = phys[:n]
	nl, stopped := fpLogicalPCs(0, phys, logic, false)
	var slot *atomic.Uint64
	if alter {
		d, ok := fpFrameDelta(phys[0])
		if !ok {
			return false, nil, nil
		}
		slot = fpSPDeltaSlot(phys[0])
		slot.Store(uint64(phys[0])<<16 | uint64(d/goarch.PtrSize+1))
	}
	exact = stopped && fpStackExact(getfp(), gp.stack.lo, gp.stack.hi, phys, recs)
	if slot != nil {
		slot.Store(0)
	}
	ns := callers(1, slow)
	return exact, logic[:nl], slow[:ns]
}

// FPStackExactArch reports whether fpStackExact can confirm walks here.
const FPStackExactArch = fpExactByDelta

// FPIndex is an fpIndex (mprof_fpindex.go) and the chained table behind
// it, of its own, whose buckets are tags: a test compares them and never
// follows them.
type FPIndex struct {
	t   fpIndex
	tab fpStackTab
}

// FPStackHash is the hash the profiles' stack tables and index use.
func FPStackHash(stk []uintptr, extra uintptr) uintptr { return fpStackHash(stk, extra) }

// FPIndexBase is the smallest PC a slot can hold.
func FPIndexBase() uintptr { return fpIndexBase() }

const (
	FPIndexPCs   = fpIndexPCs
	FPIndexProbe = fpIndexProbe
	FPIndexSlots = fpIndexSlots
)

// FPIndex lookup results.
const (
	FPIndexFound = int(fpIndexFound)
	FPIndexRoom  = int(fpIndexRoom)
	FPIndexFull  = int(fpIndexFull)
)

func (x *FPIndex) Insert(h uintptr, phys []uintptr, key uintptr, flag bool, tag uintptr) bool {
	return x.t.insert(h, phys, key, flag, (*bucket)(unsafe.Pointer(tag)))
}

func (x *FPIndex) Lookup(h uintptr, phys []uintptr, key uintptr, flag bool) (tag uintptr, status int) {
	s, st := x.t.lookup(h, phys, key, flag)
	if st == fpIndexFound {
		return uintptr(unsafe.Pointer(s.b)), int(st)
	}
	return 0, int(st)
}

// InsertTable inserts into the chained table behind the index, as the
// heap profile does on a stack's first sighting.
func (x *FPIndex) InsertTable(h uintptr, phys []uintptr, key uintptr, flag bool, tag uintptr, slow bool) {
	if x.tab.nbuckets == 0 {
		x.tab = fpStackTab{name: "test", nbuckets: 1 << 6}
	}
	x.tab.insert(h, phys, key, flag, nil, (*bucket)(unsafe.Pointer(tag)), slow)
}

// Find is what the heap profile does with a stack it walked.
func (x *FPIndex) Find(h uintptr, phys []uintptr, key uintptr, flag bool) (tag uintptr, slow, found bool) {
	if x.tab.nbuckets == 0 {
		x.tab = fpStackTab{name: "test", nbuckets: 1 << 6}
	}
	b, slow, found := x.t.find(&x.tab, h, phys, key, flag)
	return uintptr(unsafe.Pointer(b)), slow, found
}

// PrefetchWrite and PrefetchWrite3 are the write prefetches of prefetchw.go.
var (
	PrefetchWrite  = prefetchWrite
	PrefetchWrite3 = prefetchWrite3
)
