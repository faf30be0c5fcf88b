// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

type pcountsObj [48]byte

var pcountsSink []*pcountsObj

// pcountsAlloc allocates one object, d frames below its first call: each
// depth is a stack of its own, so a bucket of its own.
//
//go:noinline
func pcountsAlloc(d int) *pcountsObj {
	if d > 0 {
		return pcountsAlloc(d - 1)
	}
	return new(pcountsObj)
}

// TestMemProfilePCounts checks that the allocations the Ps count
// themselves (mprof_pcounts.go) all reach the profile: with more stacks
// than a P has slots for, across collections, and across GOMAXPROCS
// changes that destroy Ps with counts pending.
func TestMemProfilePCounts(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	defer func() { pcountsSink = nil }()

	// Publish something, so that the Ps count.
	pcountsSink = append(pcountsSink, new(pcountsObj))
	runtime.GC()
	runtime.GC()
	if !runtime.MemProfPublished() {
		t.Fatalf("the published heap profile is still empty after two collections")
	}
	base := pcountsProfile(t)

	const depths = 12 // more than memProfPSlots
	total := int64(0)
	for round, procs := range []int{2, 4, 1, 3, 2} {
		runtime.GOMAXPROCS(procs)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for g := range 2 * procs {
			wg.Go(func() {
				var keep []*pcountsObj
				for i := range 3000 {
					p := pcountsAlloc((i + g) % depths)
					if i%4 == 0 {
						keep = append(keep, p)
					}
				}
				mu.Lock()
				pcountsSink = append(pcountsSink, keep...)
				mu.Unlock()
			})
			total += 3000
		}
		wg.Wait()
		// Rounds 1 and 3 end with counts pending when the next one
		// destroys Ps.
		if round%2 == 0 {
			runtime.GC()
		}
	}
	pcountsSink = nil
	runtime.GC()
	runtime.GC()
	runtime.GC()
	got := pcountsProfile(t)
	if allocs := got.allocs - base.allocs; allocs != total {
		t.Errorf("profile has %d allocations of pcountsAlloc, want %d", allocs, total)
	}
	if got.allocs != got.frees {
		t.Errorf("profile has %d allocations and %d frees of pcountsAlloc, want them equal", got.allocs, got.frees)
	}
}

type pcountsCounts struct{ allocs, frees int64 }

// pcountsProfile adds up the memory profile records of allocations in
// pcountsAlloc.
func pcountsProfile(t *testing.T) pcountsCounts {
	t.Helper()
	return pcountsProfileOf(".pcountsAlloc")
}

// pcountsProfileOf adds up the memory profile records of pcountsObj
// objects with a frame of the function whose name ends in fn.
func pcountsProfileOf(fn string) pcountsCounts {
	var c pcountsCounts
	for _, r := range memProfileRecordsOfSize(unsafe.Sizeof(pcountsObj{})) {
		// Any frame: a sample taken on malloc's slow path may start
		// with the malloc function (see TestMemoryProfiler).
		for _, pc := range r.Stack() {
			if f := runtime.FuncForPC(pc); f != nil && strings.HasSuffix(f.Name(), fn) {
				c.allocs += r.AllocObjects
				c.frees += r.FreeObjects
				break
			}
		}
	}
	return c
}

var pcountsFreeSink []*pcountsObj

//go:noinline
func pcountsFreeAlloc() *pcountsObj { return new(pcountsObj) }

// TestMemProfilePCountsFrees checks that the frees the Ps log during a
// sweep are in the profile as soon as runtime.GC returns, as upstream's
// are: runtime.GC publishes the sweep's frees (mProf_PostSweep), so it
// must first fold every P's log, which holds fewer frees than it folds by
// itself.
func TestMemProfilePCountsFrees(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	runtime.GC()
	runtime.GC()
	if !runtime.MemProfPublished() {
		t.Fatalf("the published heap profile is still empty after two collections")
	}
	count := func() (allocs, frees int64) {
		c := pcountsProfileOf(".pcountsFreeAlloc")
		return c.allocs, c.frees
	}
	a0, f0 := count()
	const n = 50 // fewer than a log holds
	for range n {
		pcountsFreeSink = append(pcountsFreeSink, pcountsFreeAlloc())
	}
	runtime.GC()
	runtime.GC()
	if a, f := count(); a-a0 != n || f != f0 {
		t.Fatalf("after allocating %d: %d allocations and %d frees, want %d and 0", n, a-a0, f-f0, n)
	}
	pcountsFreeSink = nil
	runtime.GC()
	if a, f := count(); a-a0 != n || f-f0 != n {
		t.Errorf("after freeing them and one collection: %d allocations and %d frees, want %d and %d", a-a0, f-f0, n, n)
	}
}
