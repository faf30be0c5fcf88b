// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Differential tests of frame-pointer unwinding in the heap profiler: the
// same code is recorded with the frame-pointer path and with the slow path
// (GODEBUG=memprofilefpunwindoff=1, switched at run time) in one process,
// and the records must be identical.

package runtime_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
)

//go:generate go run mkfpcorpus.go

var (
	fpcSink any
	fpcStr  = strings.Repeat("s", 40)
)

type fpcT struct{ x [3]int }

func (t *fpcT) M() { fpcSink = &fpcT{t.x} }

type fpcV struct{ x int }

func (v fpcV) N() { fpcSink = &[5]int{v.x} }

type fpcI interface{ M() }

func fpcInlAlloc() { fpcSink = &[6]int{} }

//go:noinline
func fpcGeneric[X any](x X) { fpcSink = &[2]X{x} }

//go:noinline
func fpcReflectTarget() { fpcSink = make([]byte, 48) }

// memProfileByStack returns the allocation counts of the memory profile
// records whose stack passes keep, keyed by size and stack. A key ends in
// " *" if the allocation is made directly by package runtime_test code
// (only runtime frames inside it), so it happens on every run of the
// corpus; others may come from caches or pools that allocate once.
func memProfileByStack(keep func(frames []string) bool) map[string]int64 {
	for range 3 {
		runtime.GC()
	}
	var p []runtime.MemProfileRecord
	n, ok := runtime.MemProfile(nil, true)
	for !ok {
		p = make([]runtime.MemProfileRecord, n+50)
		n, ok = runtime.MemProfile(p, true)
	}
	m := map[string]int64{}
	for _, r := range p[:n] {
		if r.AllocObjects == 0 || r.AllocBytes/r.AllocObjects < 16 {
			continue // tiny allocations are sampled by block, not by object
		}
		stk := r.Stack()
		var frames []string
		cf := runtime.CallersFrames(stk)
		for {
			f, more := cf.Next()
			frames = append(frames, f.Function)
			if !more {
				break
			}
		}
		if keep(frames) {
			k := fmt.Sprintf("%d %x", r.AllocBytes/r.AllocObjects, stk)
			i := slices.IndexFunc(frames, func(f string) bool { return !strings.HasPrefix(f, "runtime.") })
			if i >= 0 && strings.HasPrefix(frames[i], "runtime_test.") {
				k += " *"
			}
			m[k] += r.AllocObjects
		}
	}
	return m
}

func hasFramePrefix(frames []string, prefix string) bool {
	return slices.ContainsFunc(frames, func(f string) bool { return strings.HasPrefix(f, prefix) })
}

// delta returns the counts in after that grew since before.
func delta(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// checkSameBuckets checks that a phase recorded with the other unwinder
// added to the buckets of the first phase, and only to those.
func checkSameBuckets(t *testing.T, what string, first, d map[string]int64) {
	t.Helper()
	for k, v := range d {
		if first[k] == 0 {
			t.Errorf("%s: stack recorded only by the second unwinder: %s (%d)", what, k, v)
		}
	}
	for k := range first {
		if strings.HasSuffix(k, " *") && d[k] == 0 {
			t.Errorf("%s: stack not recorded by the second unwinder: %s", what, k)
		}
	}
}

func runFPCorpus() {
	for _, c := range fpcCorpus {
		for _, d := range fpcCorpusDepths {
			c.f(d)
		}
	}
}

func TestMemProfileFPDifferential(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()

	// Runtime-internal allocations on the system stack: new goroutines
	// that find no free g allocate one in malg, under systemstack.
	var release sync.WaitGroup
	release.Add(1)
	defer release.Done()
	startParked := func() {
		for range 300 {
			go func() { release.Wait() }()
		}
	}
	corpus := func(frames []string) bool { return hasFramePrefix(frames, "runtime_test.fpcLeaf_") }
	sysstack := func(frames []string) bool {
		return slices.Contains(frames, "runtime.malg") && slices.Contains(frames, "runtime.newproc1")
	}

	// The malloc path is one frame deeper while the GC marks, so keep the
	// GC off while the corpus runs.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	prev, prevSys := memProfileByStack(corpus), memProfileByStack(sysstack)
	var deltas []map[string]int64
	var sys []map[string]int64
	for i, off := range []string{"0", "1", "0"} {
		setGODEBUG(t, "memprofilefpunwindoff="+off)
		runFPCorpus()
		startParked()
		cur, curSys := memProfileByStack(corpus), memProfileByStack(sysstack)
		deltas = append(deltas, delta(prev, cur))
		sys = append(sys, delta(prevSys, curSys))
		prev, prevSys = cur, curSys
		if i > 0 {
			checkSameBuckets(t, fmt.Sprintf("phase %d (memprofilefpunwindoff=%s)", i, off), deltas[0], deltas[i])
		}
	}
	if len(deltas[0]) < len(fpcCorpus)*len(fpcCorpusDepths) {
		t.Errorf("corpus produced %d distinct stacks, want at least %d", len(deltas[0]), len(fpcCorpus)*len(fpcCorpusDepths))
	}
	// The system-stack allocation depends on free gs; all phases that
	// sampled it must agree on one stack.
	all := map[string]bool{}
	for _, s := range sys {
		for k := range s {
			all[k] = true
		}
	}
	if len(all) > 1 {
		t.Errorf("system-stack allocation recorded with %d different stacks: %v", len(all), all)
	}
	t.Logf("%d corpus stacks, %d system-stack stacks", len(deltas[0]), len(all))
}

// TestMemProfileFPDepthLimit checks that stacks cut at the depth limit
// from different depths share one record, as with callers().
func TestMemProfileFPDepthLimit(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	keep := func(frames []string) bool { return slices.Contains(frames, "runtime_test.fpcLeaf_new") }
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := memProfileByStack(keep)
	for _, d := range []int{400, 401, 437} {
		fpcRec_new(d)
	}
	after := memProfileByStack(keep)
	grew := 0
	for k, v := range after {
		if v > before[k] {
			grew++
			if n := strings.Count(k, " "); n < 32 {
				t.Errorf("deep stack has only %d frames: %s", n, k)
			}
		}
	}
	if grew != 1 {
		t.Errorf("allocations past the depth limit landed in %d records, want 1", grew)
	}
}

// fpSightDepth is the last depth TestMemProfileFPEntryOnSecondSight used.
var fpSightDepth = 50

// fpSightAlloc allocates d frames below its caller.
//
//go:noinline
func fpSightAlloc(d int) {
	if d > 0 {
		fpSightAlloc(d - 1)
		return
	}
	fpcSink = new([6]int)
}

// TestMemProfileFPEntryOnSecondSight checks that a new stack's first
// sampled allocation creates its bucket but no entry in the stack table,
// and that its second one adds the entry.
func TestMemProfileFPEntryOnSecondSight(t *testing.T) {
	if !fpArch() || !runtime.FPStackExactArch {
		t.Skip("new stacks are confirmed by frame sizes on amd64 only; elsewhere callers() confirms them, and the entry is made at once")
	}
	if g := os.Getenv("GODEBUG"); strings.Contains(g, "fpunwindcheck") || strings.Contains(g, "memprofilefpunwindoff") {
		t.Skip("needs the frame-pointer path without fpunwindcheck, set at startup")
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// The next sample was drawn at the old rate: reach it, so that every
	// allocation from here on is sampled.
	fpcSink = make([]byte, 4<<20)
	const trials = 10
	quiet, grew := 0, 0
	for range trials {
		// A depth no other trial uses: a stack the process has not seen.
		fpSightDepth++
		d := fpSightDepth
		var bytes [3]uintptr
		bytes[0] = runtime.MemProfStackBytes()
		for j := 1; j < len(bytes); j++ {
			fpSightAlloc(d)
			bytes[j] = runtime.MemProfStackBytes()
		}
		if bytes[1] == bytes[0] {
			quiet++
		}
		if bytes[2] > bytes[1] {
			grew++
		}
	}
	// Other goroutines may add entries now and then; a first sighting
	// that added one would do so in every trial.
	if quiet < trials/2 {
		t.Errorf("a first sighting added a stack table entry in %d of %d trials", trials-quiet, trials)
	}
	if grew != trials {
		t.Errorf("a second sighting added a stack table entry in %d of %d trials, want all", grew, trials)
	}
}

// fpExactRec reaches depth d through two call sites, a closure and a
// method value, as the tree workloads of the heap profiler do.
//
//go:noinline
func fpExactRec(d int, left bool, at func()) {
	switch {
	case d == 0:
		at()
	case left:
		fpExactRec(d-1, d%3 == 0, at)
	default:
		func() { fpExactRec(d-1, d%2 == 0, at) }()
	}
}

type fpExactT struct{ f func() }

func (t fpExactT) call() { defer func() {}(); t.f() }

// TestFPStackExact checks that the frame-size confirmation of the heap
// profiler's walks (mprof_fpexact.go) accepts the stacks of ordinary Go
// code, that what it accepts is what the slow unwinder records, and that it
// rejects a walk that differs from the stack.
func TestFPStackExact(t *testing.T) {
	if !runtime.FPStackExactArch {
		t.Skip("frame-size confirmation is amd64 only")
	}
	for d := 0; d < 40; d += 3 {
		for _, left := range []bool{false, true} {
			var exact, rejected bool
			var fp, slow []uintptr
			at := func() {
				exact, fp, slow = runtime.FPStackExactHere(false)
				rejected, _, _ = runtime.FPStackExactHere(true)
			}
			m := fpExactT{at}.call
			fpExactRec(d, left, m)
			if !exact {
				t.Errorf("depth %d left %v: walk not confirmed", d, left)
			}
			if rejected {
				t.Errorf("depth %d left %v: altered walk confirmed", d, left)
			}
			if !slices.Equal(fp, slow) {
				t.Errorf("depth %d left %v: frame pointers %v, slow unwinder %v", d, left, fp, slow)
			}
		}
	}
}

// TestFPUnwindCheckHeap checks the heap profile's walks with
// GODEBUG=fpunwindcheck, that an altered result is reported, and that the
// exit report has a line for the heap site.
func TestFPUnwindCheckHeap(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	fpunwindcheckSites(t, []string{"heap"}, func() {
		old := runtime.MemProfileRate
		runtime.MemProfileRate = 1
		runFPCorpus()
		runtime.MemProfileRate = old
	})

	setGODEBUG(t, "")
	defer runtime.SetFPUnwindCheck(runtime.SetFPUnwindCheck(true))
	c0, m0 := runtime.FPUnwindCheckCounts("heap")
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	runtime.FPUnwindCheckInject()
	fpcRec_make(3)
	runtime.MemProfileRate = old
	c1, m1 := runtime.FPUnwindCheckCounts("heap")
	if c1 == c0 || m1 != m0+1 {
		t.Errorf("injected mismatch: checked %d->%d, mismatches %d->%d; want one more mismatch", c0, c1, m0, m1)
	}

	fpunwindcheckExitReport(t, "heap")
}
