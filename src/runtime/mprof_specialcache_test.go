// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"
)

var specialCacheSink [][]*[64]byte

// TestSpecialProfileCache checks that no heap profile special leaks from,
// or is lost by, the per-P caches (mprof_specialcache.go): every special in
// use by its fixalloc is attached to an object, in a P's cache or on the
// global list of batches, across collections, goroutines on several Ps and
// changes of GOMAXPROCS, which destroy Ps and their caches; and that the
// span lists stay sorted with addspecial's hint.
func TestSpecialProfileCache(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	defer func() { specialCacheSink = nil }()

	check := func(when string) {
		t.Helper()
		inuse, attached, cached, global, bad := runtime.SpecialProfileCounts()
		if inuse != attached+cached+global || bad != 0 {
			t.Errorf("%s: %d specials in use, %d attached + %d cached + %d on the global list = %d; %d bad lists",
				when, inuse, attached, cached, global, attached+cached+global, bad)
		}
	}
	check("start")
	sawCached := false
	for round, procs := range []int{2, 4, 1, 3, 2, 1, 4} {
		runtime.GOMAXPROCS(procs)
		var wg sync.WaitGroup
		keep := make([][]*[64]byte, 2*procs)
		for g := range keep {
			wg.Go(func() {
				objs := make([]*[64]byte, 5000)
				for i := range objs {
					objs[i] = new([64]byte)
					// Specials of other kinds, before and after the
					// profile special in the span's list.
					switch i % 7 {
					case 1:
						weak.Make(objs[i])
					case 2:
						runtime.AddCleanup(objs[i], func(int) {}, 0)
					case 3:
						runtime.SetFinalizer(objs[i], func(*[64]byte) {})
					}
				}
				// Keep one object in three, from one goroutine in two.
				if g%2 == 0 {
					for i := range objs {
						if i%3 != 0 {
							objs[i] = nil
						}
					}
					keep[g] = objs
				}
			})
		}
		wg.Wait()
		check("after allocating")
		specialCacheSink = append(specialCacheSink, keep...)
		if round%2 == 1 {
			specialCacheSink = specialCacheSink[len(specialCacheSink)/2:]
		}
		runtime.GC()
		check("after GC")
		runtime.GC()
		_, _, cached, global, _ := runtime.SpecialProfileCounts()
		if cached+global > 0 {
			sawCached = true
		}
		check("after a second GC")
	}
	specialCacheSink = nil
	runtime.GOMAXPROCS(1)
	runtime.GC()
	runtime.GC()
	check("end")
	if !sawCached {
		t.Errorf("no profile special was ever in a cache")
	}
}

var specialBitSink []*[64]byte

// TestSpecialProfileSpanBit checks that a heap profile record does not mark
// its span in the arena's pageSpecials bitmap, which tells markrootSpans
// where finalizers, weak handles and cleanups are (mprof_specialcache.go),
// while a special of another kind still does (SpecialProfileCounts).
func TestSpecialProfileSpanBit(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	defer func() { specialBitSink = nil }()
	specialBitSink = make([]*[64]byte, 4096)
	for i := range specialBitSink {
		specialBitSink[i] = new([64]byte)
	}
	set, clear := runtime.SpecialProfileSpanBits()
	if clear == 0 {
		t.Errorf("no span holding only profile records has its pageSpecials bit clear (%d have it set)", set)
	}
	// Finalizers on some of the objects: their spans must be marked, and
	// the finalizers must run once the objects die.
	var ran atomic.Int32
	for i := 0; i < len(specialBitSink); i += 256 {
		runtime.SetFinalizer(specialBitSink[i], func(*[64]byte) { ran.Add(1) })
	}
	if _, _, _, _, bad := runtime.SpecialProfileCounts(); bad != 0 {
		t.Errorf("%d spans are not as they should be, with finalizers among profile records", bad)
	}
	runtime.GC() // the finalizers' objects stay alive through marking
	if ran.Load() != 0 {
		t.Fatalf("%d finalizers ran for reachable objects", ran.Load())
	}
	specialBitSink = nil
	want := int32(4096 / 256)
	for try := 0; try < 100 && ran.Load() < want; try++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := ran.Load(); got != want {
		t.Errorf("%d of %d finalizers ran", got, want)
	}
}
