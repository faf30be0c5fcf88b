// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

var touchSink []*[4]int

// touchAllocAt allocates n objects from a stack d frames of touchAllocAt
// deep, a distinct memory profile bucket per d.
//
//go:noinline
func touchAllocAt(d, n int) {
	if d > 0 {
		touchAllocAt(d-1, n)
		return
	}
	for range n {
		touchSink = append(touchSink, new([4]int))
	}
}

// memProfileRecords returns the published heap profile, with the records
// that are all freed.
func memProfileRecords() []runtime.MemProfileRecord {
	var p []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		p = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(p, true); ok {
			return p[:n]
		}
	}
}

// memProfileRecordsOfSize returns the records of memProfileRecords whose
// objects are size bytes.
//
// A test that counts the records of its own functions needs this: the
// runtime allocates on behalf of whatever goroutine is running, charged to
// its stack. A collection that starts in the test's malloc creates the mark
// workers of new Ps (a g each, never freed), and a wakeup there may create
// an M. A bucket is keyed by stack and object size, so the size tells the
// test's records from those.
func memProfileRecordsOfSize(size uintptr) []runtime.MemProfileRecord {
	p := memProfileRecords()
	n := 0
	for _, r := range p {
		if r.AllocBytes == int64(size)*r.AllocObjects {
			p[n] = r
			n++
		}
	}
	return p[:n]
}

// touchCounts returns the published allocs and frees of the buckets of
// touchAllocAt, by depth.
func touchCounts() (allocs, frees map[int]int64) {
	allocs, frees = map[int]int64{}, map[int]int64{}
	for _, r := range memProfileRecordsOfSize(unsafe.Sizeof([4]int{})) {
		d := -1
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasSuffix(f.Function, ".touchAllocAt") {
				d++
			}
			if !more {
				break
			}
		}
		if d >= 0 && r.AllocObjects != 0 {
			allocs[d] += r.AllocObjects
			frees[d] += r.FreeObjects
		}
	}
	return allocs, frees
}

// TestMemProfileFlushTouched checks that the garbage collector's flushes,
// which visit only the buckets that counted into a cycle, publish every
// allocation and free, and that buckets not touched in a cycle keep their
// counts.
func TestMemProfileFlushTouched(t *testing.T) {
	defer func(old int) { runtime.MemProfileRate = old }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	const depths, per = 24, 7
	runtime.GC()
	runtime.GC()
	a0, f0 := touchCounts()
	touchSink = make([]*[4]int, 0, depths*per) // no growth in touchAllocAt
	for d := range depths {
		touchAllocAt(d, per)
	}
	// Two cycles publish the allocations.
	runtime.GC()
	runtime.GC()
	runtime.GC()
	am, fm := touchCounts()
	// The frees come cycles after the allocations, when no allocation
	// touches the buckets: one more cycle publishes them.
	touchSink = nil
	runtime.GC()
	runtime.GC()
	runtime.GC()
	a1, f1 := touchCounts()
	for d := range depths {
		if got := am[d] - a0[d]; got != per {
			t.Errorf("depth %d: %d allocations published, want %d", d, got, per)
		}
		if got := fm[d] - f0[d]; got != 0 {
			t.Errorf("depth %d: %d frees published while all are live", d, got)
		}
		if got := a1[d] - a0[d]; got != per {
			t.Errorf("depth %d: %d allocations published after the frees, want %d", d, got, per)
		}
		if got := f1[d] - f0[d]; got != per {
			t.Errorf("depth %d: %d frees published, want %d", d, got, per)
		}
	}
	// Touch only every third bucket.
	touchSink = make([]*[4]int, 0, depths*per)
	for d := 0; d < depths; d += 3 {
		touchAllocAt(d, per)
	}
	touchSink = nil
	runtime.GC()
	runtime.GC()
	runtime.GC()
	a2, f2 := touchCounts()
	for d := range depths {
		want := int64(0)
		if d%3 == 0 {
			want = per
		}
		if got := a2[d] - a1[d]; got != want {
			t.Errorf("second round, depth %d: %d allocations published, want %d", d, got, want)
		}
		if got := f2[d] - f1[d]; got != want {
			t.Errorf("second round, depth %d: %d frees published, want %d", d, got, want)
		}
	}
}

var touchTreeSink []*[4]int

// touchTree allocates one object at each node of a binary tree of depth
// d: its two call sites give each node a stack, and a bucket, of its own.
//
//go:noinline
func touchTree(d int) {
	touchTreeSink = append(touchTreeSink, new([4]int))
	if d > 0 {
		touchTree(d - 1)
		touchTree(d - 1)
	}
}

// TestMemProfileFlushTouchedMany touches more buckets in a cycle than a
// block of the touched list holds, twice, so that the flush walks several
// blocks and the second round reuses them.
func TestMemProfileFlushTouchedMany(t *testing.T) {
	defer func(old int) { runtime.MemProfileRate = old }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	const depth = 10 // 2047 stacks
	const nodes = 1<<(depth+1) - 1
	count := func() (allocs, frees, buckets int64) {
		for _, r := range memProfileRecordsOfSize(unsafe.Sizeof([4]int{})) {
			for _, pc := range r.Stack() {
				if f := runtime.FuncForPC(pc); f != nil && strings.HasSuffix(f.Name(), ".touchTree") {
					allocs += r.AllocObjects
					frees += r.FreeObjects
					buckets++
					break
				}
			}
		}
		return
	}
	runtime.GC()
	runtime.GC()
	a0, f0, _ := count()
	for round := int64(1); round <= 2; round++ {
		touchTreeSink = make([]*[4]int, 0, nodes)
		touchTree(depth)
		runtime.GC()
		runtime.GC()
		a, f, b := count()
		if a-a0 != round*nodes || f-f0 != (round-1)*nodes {
			t.Errorf("round %d, objects live: %d allocations and %d frees, want %d and %d", round, a-a0, f-f0, round*nodes, (round-1)*nodes)
		}
		if b < nodes {
			t.Errorf("round %d: %d buckets, want at least %d", round, b, nodes)
		}
		touchTreeSink = nil
		runtime.GC()
		runtime.GC()
		runtime.GC()
		if a, f, _ = count(); a-a0 != round*nodes || f-f0 != round*nodes {
			t.Errorf("round %d, objects freed: %d allocations and %d frees, want %d each", round, a-a0, f-f0, round*nodes)
		}
	}
}
