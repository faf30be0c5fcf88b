// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"slices"
	"sync"
	"testing"
)

// fpIndexStack returns a physical stack of n PCs in the first module's
// text, distinct for each seed.
func fpIndexStack(seed, n int) []uintptr {
	base := runtime.FPIndexBase()
	s := make([]uintptr, n)
	for i := range s {
		s[i] = base + uintptr(seed*1000+i*4)
	}
	return s
}

// fpIndexTag is the bucket a test maps a stack to: not a real bucket,
// which the index never follows.
func fpIndexTag(seed int) uintptr { return 1<<40 + uintptr(seed)*8 }

// TestFPIndex checks the heap profile's open-addressed stack index: that
// it finds exactly what was inserted under its key and flag, and that it
// says whether it has room for a stack it does not hold.
func TestFPIndex(t *testing.T) {
	var x runtime.FPIndex
	const h = 0x1234_5670 // one hash for all, so they share a probe window

	if _, st := x.Lookup(h, fpIndexStack(0, 3), 64, false); st != runtime.FPIndexRoom {
		t.Fatalf("lookup in an empty index: status %d, want FPIndexRoom", st)
	}

	// The window holds FPIndexProbe stacks of one hash.
	for i := range runtime.FPIndexProbe {
		if !x.Insert(h, fpIndexStack(i, 5), 64, false, fpIndexTag(i)) {
			t.Fatalf("insert %d into a window with room failed", i)
		}
	}
	for i := range runtime.FPIndexProbe {
		tag, st := x.Lookup(h, fpIndexStack(i, 5), 64, false)
		if st != runtime.FPIndexFound || tag != fpIndexTag(i) {
			t.Errorf("lookup %d: tag %#x status %d; want %#x found", i, tag, st, fpIndexTag(i))
		}
	}
	// It is full: the next stack of that hash stays out.
	if x.Insert(h, fpIndexStack(9, 5), 64, false, fpIndexTag(9)) {
		t.Errorf("insert into a full window succeeded")
	}
	if _, st := x.Lookup(h, fpIndexStack(9, 5), 64, false); st != runtime.FPIndexFull {
		t.Errorf("lookup past a full window: status %d, want FPIndexFull", st)
	}

	// What differs from an inserted stack only in its key, its flag, its
	// length or one PC is not found.
	near := map[string]func() ([]uintptr, uintptr, bool){
		"key":    func() ([]uintptr, uintptr, bool) { return fpIndexStack(1, 5), 80, false },
		"flag":   func() ([]uintptr, uintptr, bool) { return fpIndexStack(1, 5), 64, true },
		"prefix": func() ([]uintptr, uintptr, bool) { return fpIndexStack(1, 4), 64, false },
		"longer": func() ([]uintptr, uintptr, bool) { return fpIndexStack(1, 6), 64, false },
		"pc": func() ([]uintptr, uintptr, bool) {
			s := fpIndexStack(1, 5)
			s[3] += 4
			return s, 64, false
		},
	}
	for name, f := range near {
		phys, key, flag := f()
		if tag, st := x.Lookup(h, phys, key, flag); st == runtime.FPIndexFound {
			t.Errorf("%s differs but was found (tag %#x)", name, tag)
		}
	}

	// Another hash lands in an empty slot.
	if _, st := x.Lookup(h+64, fpIndexStack(20, 5), 64, false); st != runtime.FPIndexRoom {
		t.Errorf("lookup of a hash with a free slot: status %d, want FPIndexRoom", st)
	}

	// Stacks a slot cannot hold.
	deep := fpIndexStack(30, runtime.FPIndexPCs+1)
	if x.Insert(h+128, deep, 64, false, fpIndexTag(30)) {
		t.Errorf("inserted a stack of %d frames", len(deep))
	}
	if _, st := x.Lookup(h+128, deep, 64, false); st != runtime.FPIndexFull {
		t.Errorf("lookup of a stack too deep for a slot: status %d, want FPIndexFull", st)
	}
	full := fpIndexStack(31, runtime.FPIndexPCs)
	if !x.Insert(h+192, full, 64, false, fpIndexTag(31)) {
		t.Errorf("a stack of %d frames was not inserted", len(full))
	} else if tag, st := x.Lookup(h+192, full, 64, false); st != runtime.FPIndexFound || tag != fpIndexTag(31) {
		t.Errorf("lookup of a stack of %d frames: tag %#x status %d", len(full), tag, st)
	}
	if base := runtime.FPIndexBase(); base > 0 {
		low := []uintptr{base - 1, base + 8}
		if x.Insert(h+256, low, 64, false, fpIndexTag(32)) {
			t.Errorf("inserted a PC below the first module's text")
		}
	}
	far := []uintptr{runtime.FPIndexBase() + 1<<32}
	if x.Insert(h+320, far, 64, false, fpIndexTag(33)) {
		t.Errorf("inserted a PC 4 GB past the first module's text")
	}
}

// TestFPIndexFind checks how a stack reaches the index: its first sighting
// puts it in the chained table, and the next one moves it into the index,
// unless it must take the slow path or its window is full.
func TestFPIndexFind(t *testing.T) {
	var x runtime.FPIndex
	const h = 0x4321_0000
	if _, _, found := x.Find(h, fpIndexStack(1, 6), 64, false); found {
		t.Fatalf("found a stack never inserted")
	}
	for i := range 3 {
		x.InsertTable(h, fpIndexStack(i, 6), 64, false, fpIndexTag(i), i == 1)
	}
	for i := range 3 {
		_, st := x.Lookup(h, fpIndexStack(i, 6), 64, false)
		tag, slow, found := x.Find(h, fpIndexStack(i, 6), 64, false)
		if st == runtime.FPIndexFound || !found || tag != fpIndexTag(i) || slow != (i == 1) {
			t.Errorf("stack %d, first find: tag %#x slow %v found %v, index %d; want %#x %v true, not in the index", i, tag, slow, found, st, fpIndexTag(i), i == 1)
		}
		tag, st = x.Lookup(h, fpIndexStack(i, 6), 64, false)
		if want := i != 1; (st == runtime.FPIndexFound) != want || (want && tag != fpIndexTag(i)) {
			t.Errorf("stack %d after a find: in the index %v (tag %#x), want %v", i, st == runtime.FPIndexFound, tag, want)
		}
	}
	// Fill the window; a stack sighted again then stays in the table.
	for i := 10; i < 10+runtime.FPIndexProbe; i++ {
		x.Insert(h, fpIndexStack(i, 6), 64, false, fpIndexTag(i))
	}
	x.InsertTable(h, fpIndexStack(20, 6), 64, false, fpIndexTag(20), false)
	if tag, _, found := x.Find(h, fpIndexStack(20, 6), 64, false); !found || tag != fpIndexTag(20) {
		t.Errorf("stack behind a full window: tag %#x found %v", tag, found)
	}
	if _, st := x.Lookup(h, fpIndexStack(20, 6), 64, false); st != runtime.FPIndexFull {
		t.Errorf("stack behind a full window: index status %d, want FPIndexFull", st)
	}
}

// TestFPIndexConcurrent inserts and looks up the same stacks from several
// goroutines: a lookup may miss a stack being inserted, but never returns
// another stack's bucket.
func TestFPIndexConcurrent(t *testing.T) {
	var x runtime.FPIndex
	const stacks, workers = 3000, 4
	n := 300
	if testing.Short() {
		n = 50
	}
	hash := func(i int) uintptr { return uintptr(i%700) * 0x9e3779b1 } // collisions on purpose
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range n {
				i := (r*workers + w) * 7919 % stacks
				phys := fpIndexStack(i, 3+i%20)
				tag, st := x.Lookup(hash(i), phys, 64, false)
				switch st {
				case runtime.FPIndexFound:
					if tag != fpIndexTag(i) {
						t.Errorf("stack %d found with the bucket of another: %#x", i, tag)
						return
					}
				default:
					x.Insert(hash(i), phys, 64, false, fpIndexTag(i))
				}
			}
		})
	}
	wg.Wait()
}

// TestFPStackHashSpread fills an index with the physical stacks of a
// recursive tree builder, as the heap profile sees them: two call sites,
// so every path from the root is a stack of its own, 8,191 stacks that
// differ only in which of two PCs each frame holds, built from three
// callers as BenchmarkTreeCost builds them (24,573 stacks). A hash that
// spreads them as a random function would leaves about 2,150 of them out
// (their probe windows full); one that clusters them leaves out many more.
func TestFPStackHashSpread(t *testing.T) {
	if runtime.FPIndexSlots != 1<<15 || runtime.FPIndexProbe != 4 {
		t.Skip("the bound below is for 32,768 slots and windows of 4")
	}
	base := runtime.FPIndexBase()
	malloc := []uintptr{base + 0x100, base + 0x230, base + 0x3a8} // the allocator's frames
	sites := [2]uintptr{base + 0x5008, base + 0x5014}             // the two recursive calls
	var x runtime.FPIndex
	defer x.Free()
	stacks, left := 0, 0
	for c := range uintptr(3) {
		caller := []uintptr{base + 0x7020 + 0x10*c, base + 0x7100, base + 0x7400}
		for depth := 0; depth <= 12; depth++ {
			for path := 0; path < 1<<depth; path++ {
				stk := slices.Clone(malloc)
				for i := range depth {
					stk = append(stk, sites[path>>i&1])
				}
				stk = append(stk, caller...)
				if len(stk) > runtime.FPIndexPCs {
					t.Fatalf("a stack of %d frames does not fit a slot", len(stk))
				}
				stacks++
				if !x.Insert(runtime.FPStackHash(stk, 64), stk, 64, false, fpIndexTag(stacks)) {
					left++
				}
			}
		}
	}
	t.Logf("%d of %d stacks left out of the index", left, stacks)
	if left > 3000 {
		t.Errorf("%d of %d stacks left out of the index of %d slots; a random hash leaves about 2,150", left, stacks, runtime.FPIndexSlots)
	}
}

// TestFPIndexFirstInsertGrowingStack makes the first insert into an
// index, which maps its slots under the index's lock, at every depth of a
// new goroutine's stack in steps of 64 bytes (see
// TestFPStackTabFirstInsertGrowingStack: the lock is a leaf, and the
// lockrank step fails if the stack grows while it is held).
func TestFPIndexFirstInsertGrowingStack(t *testing.T) {
	phys := fpIndexStack(1, 4)
	for depth := range 512 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			atStackDepth(depth, func() {
				var x runtime.FPIndex
				defer x.Free()
				if !x.Insert(0x1234, phys, 64, false, fpIndexTag(1)) {
					t.Errorf("depth %d: the first insert into an empty index failed", depth)
				}
				if tag, st := x.Lookup(0x1234, phys, 64, false); st != runtime.FPIndexFound || tag != fpIndexTag(1) {
					t.Errorf("depth %d: lookup: tag %#x status %d after the insert", depth, tag, st)
				}
			})
		}()
		<-done
	}
}
