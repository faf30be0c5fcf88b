// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Differential tests of frame-pointer unwinding in the goroutine profile:
// the same goroutines are recorded with the frame-pointer path and with the
// slow path (GODEBUG=goroutineprofilefpunwindoff=1, switched at run time)
// in one process, and the records must be identical.

package runtime_test

import (
	"fmt"
	"internal/race"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goroutineStacks returns the goroutine profile stacks (symbolized) of the
// goroutines whose stack contains marker, sorted, and the caller's own.
func goroutineStacks(t *testing.T, marker string) []string {
	return goroutineStacks1(t, marker, true)
}

func goroutineStacks1(t *testing.T, marker string, caller bool) []string {
	t.Helper()
	var p []runtime.StackRecord
	n, ok := runtime.GoroutineProfile(nil)
	for !ok {
		p = make([]runtime.StackRecord, n+50)
		n, ok = runtime.GoroutineProfile(p)
	}
	var out []string
	for i, r := range p[:n] {
		var b strings.Builder
		found := false
		cf := runtime.CallersFrames(r.Stack())
		for {
			f, more := cf.Next()
			fmt.Fprintf(&b, "%s:%d;", f.Function, f.Line)
			found = found || strings.Contains(f.Function, marker)
			if !more {
				break
			}
		}
		if found || (caller && i == 0) { // record 0 is the caller, on the slow path
			out = append(out, fmt.Sprintf("%x %s", r.Stack(), b.String()))
		}
	}
	sort.Strings(out)
	return out
}

// fpgPark starts goroutines parked in many states, 22 frames deep; stop
// wakes them.
func fpgPark(t *testing.T) (stop func()) {
	var mu sync.Mutex
	mu.Lock()
	done := make(chan struct{})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Fd() // puts r in blocking mode: its reads are system calls, not parks
	var started, exited sync.WaitGroup
	states := map[string]func(){
		"chan": func() { <-done },
		"select": func() {
			select {
			case <-done:
			case <-time.After(time.Hour):
			}
		},
		"mutex": func() { mu.Lock(); mu.Unlock() },
		"sleep": func() {
			tm := time.NewTimer(time.Hour)
			select {
			case <-tm.C:
			case <-done:
			}
		},
		"syscall": func() { var b [1]byte; r.Read(b[:]) }, // blocking: r.Fd below
		"locked":  func() { runtime.LockOSThread(); <-done; runtime.UnlockOSThread() },
		"recovered": func() {
			defer func() { recover(); <-done }()
			panic("fpg")
		},
		"cond": func() { c := sync.NewCond(&mu); _ = c; <-done },
	}
	for _, f := range states {
		for _, d := range []int{0, 20, 200} {
			started.Add(1)
			exited.Add(1)
			go func() {
				defer exited.Done()
				started.Done()
				fpgDeep(d, f)
			}()
		}
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // let them park
	return func() {
		close(done)
		mu.Unlock()
		w.Write(make([]byte, 3))
		exited.Wait()
		r.Close()
		w.Close()
	}
}

func TestGoroutineProfileFPDifferential(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	stop := fpgPark(t)
	defer stop()
	var got [][]string
	for _, off := range []string{"0", "1", "0", "0"} {
		setGODEBUG(t, "goroutineprofilefpunwindoff="+off)
		got = append(got, goroutineStacks(t, "fpgDeep"))
	}
	if len(got[0]) < 20 {
		t.Fatalf("found %d parked goroutines, want at least 20", len(got[0]))
	}
	for i := 1; i < len(got); i++ {
		if !slices.Equal(got[0], got[i]) {
			t.Errorf("profile %d differs from profile 0:\n%s\nvs\n%s", i, strings.Join(got[i], "\n"), strings.Join(got[0], "\n"))
		}
	}
}

// TestGoroutineProfileFPMoved checks that goroutines that ran between two
// profiles are not reported at their old place (the per-goroutine cache).
func TestGoroutineProfileFPMoved(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	const n = 50
	step := make(chan struct{})
	var parked sync.WaitGroup
	parked.Add(n)
	for range n {
		go fpgDeep(5, func() {
			parked.Done()
			<-step // place A
			fpgMovedB(step, &parked)
		})
	}
	parked.Wait()
	time.Sleep(20 * time.Millisecond)
	for _, off := range []string{"0", "1"} {
		setGODEBUG(t, "goroutineprofilefpunwindoff="+off)
		a := goroutineStacks1(t, "fpgDeep", false)
		if len(a) != n || strings.Contains(strings.Join(a, ""), "fpgMovedB") {
			t.Fatalf("goroutineprofilefpunwindoff=%s: expected %d goroutines at place A:\n%s", off, n, strings.Join(a, "\n"))
		}
	}
	setGODEBUG(t, "goroutineprofilefpunwindoff=0")
	goroutineStacks(t, "fpgDeep") // fill the cache at place A
	parked.Add(n)
	for range n {
		step <- struct{}{}
	}
	parked.Wait()
	time.Sleep(20 * time.Millisecond)
	fast := goroutineStacks1(t, "fpgMovedB", false)
	setGODEBUG(t, "goroutineprofilefpunwindoff=1")
	slow := goroutineStacks1(t, "fpgMovedB", false)
	if len(fast) != n || !slices.Equal(fast, slow) {
		t.Errorf("after moving: frame-pointer profile\n%s\nslow profile\n%s", strings.Join(fast, "\n"), strings.Join(slow, "\n"))
	}
	close(step)
}

// TestGoroutineProfileRecordsReused checks that GoroutineProfile keeps its
// record slice from one call for the next (goroutineProfRecs) instead of
// allocating one record per goroutine at each call, and that the records
// it reuses come back clean: every call's profile equals the first's.
func TestGoroutineProfileRecordsReused(t *testing.T) {
	const n = 1000
	release := make(chan struct{})
	defer close(release)
	var parked sync.WaitGroup
	parked.Add(n)
	for range n {
		go fpgDeep(3, func() {
			parked.Done()
			<-release
		})
	}
	parked.Wait()
	p := make([]runtime.StackRecord, runtime.NumGoroutine()+100)
	// stacks returns the stacks of the goroutines in fpgDeep, and how
	// many of them are parked (in gopark, not still on their way there
	// inside chanrecv).
	stacks := func() (s []string, parked int) {
		got, ok := runtime.GoroutineProfile(p)
		if !ok {
			t.Fatalf("GoroutineProfile: %d records do not fit in %d", got, len(p))
		}
		for _, r := range p[:got] {
			fr := r.Stack()
			deep, recv := false, false
			for _, pc := range fr {
				if f := runtime.FuncForPC(pc); f != nil {
					deep = deep || strings.HasSuffix(f.Name(), ".fpgDeep")
					recv = recv || f.Name() == "runtime.gopark"
				}
			}
			if deep {
				s = append(s, fmt.Sprint(fr))
				if recv {
					parked++
				}
			}
		}
		sort.Strings(s)
		return s, parked
	}
	// A goroutine past parked.Done may not have parked in the receive
	// yet (a window -race widens): wait until all have.
	want, parkedNow := stacks()
	for try := 0; parkedNow < n && try < 1000; try++ {
		time.Sleep(time.Millisecond)
		want, parkedNow = stacks()
	}
	if len(want) != n || parkedNow != n {
		t.Fatalf("GoroutineProfile: %d goroutines in fpgDeep, %d of them parked; want %d", len(want), parkedNow, n)
	}
	// The records of n goroutines take 24 bytes each on 64-bit (12 on
	// 32-bit) when allocated afresh; the calling goroutine's own stack,
	// which takes the slow path, takes a few hundred.
	const calls = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		runtime.GoroutineProfile(p)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > n*4 {
		t.Errorf("GoroutineProfile of %d goroutines allocated %d bytes a call; want the record slice reused", n, per)
	}
	for i := range 3 {
		if got, _ := stacks(); !slices.Equal(got, want) {
			t.Fatalf("call %d: profile of %d stacks differs from the first call's %d", i+2, len(got), len(want))
		}
	}
}

var (
	fpgNotStartedRan  atomic.Bool
	fpgNotStartedDone chan struct{}
)

func fpgNotStarted() {
	fpgNotStartedRan.Store(true)
	<-fpgNotStartedDone
}

//go:noinline
func fpgMovedB(step chan struct{}, parked *sync.WaitGroup) {
	parked.Done()
	<-step // place B
}

// TestGoroutineProfileFPStates checks how goroutines are classified for the
// frame-pointer path: each state that takes the slow path is named here.
func TestGoroutineProfileFPStates(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	setGODEBUG(t, "goroutineprofilefpunwindoff=0")
	goid := make(chan uint64)
	done := make(chan struct{})
	defer close(done)
	spawn := func(f func()) uint64 {
		go func() {
			goid <- runtime.Goid()
			f()
		}()
		id := <-goid
		time.Sleep(20 * time.Millisecond)
		return id
	}
	// Parked in a channel receive: frame pointers are trusted.
	if s := runtime.GoroutineFPState(spawn(func() { <-done })); s != "ok" {
		t.Errorf("parked goroutine: state %q, want ok", s)
	}
	// Spinning without calls: stopped by asynchronous preemption, whose
	// innermost frame may not have its frame record yet.
	var stop sync.WaitGroup
	stop.Add(1)
	var flag atomic.Uint32
	id := spawn(func() {
		for flag.Load() == 0 {
		}
		stop.Done()
	})
	// Under -race the loop's load is a call into the race runtime, so
	// the goroutine can stop in that call's stack check instead, which
	// takes the slow path too.
	if s := runtime.GoroutineFPState(id); s != "asyncpreempt" && !(race.Enabled && s == "syncpreempt") {
		t.Errorf("spinning goroutine: state %q, want asyncpreempt", s)
	}
	flag.Store(1)
	stop.Wait()
	// Created but not started yet: no saved frame pointer. With one P,
	// the new goroutine cannot run before the world stops.
	func() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		fpgNotStartedDone = done
		go fpgNotStarted()
		s := runtime.GoroutineFPStateOf(fpgNotStarted)
		if fpgNotStartedRan.Load() {
			t.Logf("new goroutine ran before the world stopped; state %q", s)
		} else if s != "nofp" {
			t.Errorf("goroutine not started yet: state %q, want nofp", s)
		}
	}()
	// The off switch.
	setGODEBUG(t, "goroutineprofilefpunwindoff=1")
	if s := runtime.GoroutineFPState(spawn(func() { <-done })); s != "off" {
		t.Errorf("with goroutineprofilefpunwindoff=1: state %q, want off", s)
	}
}

//go:noinline
func fpgGrow(d int) byte {
	var pad [1024]byte
	if d > 0 {
		pad[d%len(pad)] = fpgGrow(d - 1)
	}
	return pad[0]
}

// TestGoroutineProfileHoldStack checks the goroutine profile's hold on the
// stack of a goroutine it walks: the concurrent profile reads goroutines
// while the garbage collector may shrink (move) their stacks, which once in
// about 3 million walks made a walk see the stack move (runtime/pprof's
// TestGoroutineProfileConcurrency under GODEBUG=fpunwindcheck). The walk
// holds the goroutine's scan bit, as the collector does to scan or shrink a
// stack, so the goroutine cannot change state, and its stack cannot move,
// until the walk releases it.
func TestGoroutineProfileHoldStack(t *testing.T) {
	scanBit, ranWhileHeld, ranAfter := runtime.GoroutineProfileHoldStack()
	if !scanBit || ranWhileHeld || !ranAfter {
		t.Errorf("hold took the scan bit: %v; goroutine ran while held: %v, after release: %v; want true, false, true", scanBit, ranWhileHeld, ranAfter)
	}
}

// TestGoroutineProfileFPShrink takes goroutine profiles while the garbage
// collector shrinks the stacks of the goroutines they read: goroutines
// grow their stacks, unwind, and park, over and over. Every walk must
// agree with gentraceback (fpunwindcheck), and nothing may deadlock
// between the walks' holds and the collector's.
func TestGoroutineProfileFPShrink(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	defer runtime.SetFPUnwindCheck(runtime.SetFPUnwindCheck(true))
	checked0, mismatches0 := runtime.FPUnwindCheckCounts("goroutine")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	tick := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				fpgGrow(200) // about 200 KiB of stack, then unwound
				select {
				case <-tick:
				case <-stop:
					return
				}
			}
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case tick <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	p := make([]runtime.StackRecord, 100)
	dur := 2 * time.Second
	if testing.Short() {
		dur = 500 * time.Millisecond
	}
	for end := time.Now().Add(dur); time.Now().Before(end); {
		runtime.GoroutineProfile(p)
	}
	close(stop)
	wg.Wait()
	checked, mismatches := runtime.FPUnwindCheckCounts("goroutine")
	t.Logf("%d goroutine profile walks cross-checked", checked-checked0)
	if mismatches != mismatches0 {
		t.Errorf("%d of %d goroutine profile walks rejected or differing from gentraceback", mismatches-mismatches0, checked-checked0)
	}
}

// TestFPUnwindCheckGoroutine checks the goroutine profile's walks with
// GODEBUG=fpunwindcheck, and that the exit report has a line for the
// goroutine site.
func TestFPUnwindCheckGoroutine(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	fpunwindcheckSites(t, []string{"goroutine"}, func() {
		stop := fpgPark(t)
		goroutineStacks(t, "fpgDeep")
		stop()
	})
	fpunwindcheckExitReport(t, "goroutine")
}
