// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// An open-addressed index of the heap profile's physical stacks.
//
// A sampled allocation whose physical stack was seen before finds its
// bucket in memProfStacks (mprof_fpstktab.go), a chained table: one load
// of the chain's head, then one of the entry, each a cache miss once a
// program has thousands of stacks, and the second waits for the first
// (doc/profiling-fp.md has the measurements).
//
// memProfIndex keeps the same mapping in place: an array of 32768 slots of
// two cache lines, each holding the key, the bucket and the physical stack
// itself, up to 24 frames, as 32-bit offsets from the start of the first
// module's text. A lookup reads the slot the hash picks, both of whose
// lines its caller prefetched together (prefetch), and the next slots on
// a collision, so it waits for memory once. The comparison is exact, as
// the chained table's. The slots take 4 MB of address space, whose pages
// are touched as stacks arrive (upstream's bucket hash takes 1.4 MB): a
// program with tens of thousands of stacks fills the probe windows of a
// smaller index, and a stack left out of it waits for memory twice in the
// chained table. Larger slots, for deeper stacks, mean more pages and more
// TLB misses on many stacks.
//
// A stack enters the index when it is found in the chained table, where
// an earlier sighting put it: a program's rare stacks (the allocations
// that took malloc's slow path, one in a span's worth) stay out of the
// index and leave its room to the stacks it samples often.
// A stack that does not fit (more than fpIndexPCs frames, a PC outside the
// first module's 4 GB) or whose probe window of fpIndexProbe slots is full
// stays in the chained table.
//
// Slots are claimed with a CAS on their hash word, filled, then published
// by their ready word; they are never changed or freed afterwards. A
// lookup racing an insert may miss the slot being filled and look in the
// chained table, which holds the stack too.

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

const (
	fpIndexSlots = 1 << 15 // slots in memProfIndex
	fpIndexPCs   = 24      // physical frames a slot holds
	fpIndexProbe = 4       // slots a lookup or insert examines
)

// fpIndexSlot is one physical stack of the heap profile: its hash, the
// allocation size and mode of the walk (key, flag), and its bucket.
type fpIndexSlot struct {
	hash  atomic.Uintptr // 0 while the slot is free; else the stack's hash | 1
	key   uintptr
	b     *bucket
	ready atomic.Uint32 // set once the slot is filled
	n     uint16        // frames in pcs
	flag  bool
	_     [128 - 3*goarch.PtrSize - 7 - 4*fpIndexPCs]byte // two lines on 32-bit too
	pcs   [fpIndexPCs]uint32                              // the physical stack, as offsets from fpIndexBase
}

// Compile-time check that a slot is two cache lines.
var _ [unsafe.Sizeof(fpIndexSlot{}) - 128]struct{}
var _ [128 - unsafe.Sizeof(fpIndexSlot{})]struct{}

// fpIndex is an open-addressed index of physical stacks (see above).
type fpIndex struct {
	slots atomic.UnsafePointer // *[fpIndexSlots]fpIndexSlot, 64-byte aligned
	lock  mutex                // serializes the allocation of slots
}

// memProfIndex indexes the physical stacks of memory profile buckets.
var memProfIndex fpIndex

// fpIndexStatus is the result of a lookup in an fpIndex.
type fpIndexStatus uint8

const (
	fpIndexFound fpIndexStatus = iota // found in the index
	fpIndexRoom                       // not in the index, which has room for it
	fpIndexFull                       // not in the index, which has no room for it
)

// fpIndexBase is the address the slots' PCs are offsets from.
func fpIndexBase() uintptr {
	return firstmoduledata.text
}

// fpIndexFits reports whether phys fits in a slot.
func fpIndexFits(phys []uintptr) bool {
	if len(phys) > fpIndexPCs {
		return false
	}
	base := fpIndexBase()
	for _, pc := range phys {
		if pc < base || uint64(pc-base) > 1<<32-1 {
			return false
		}
	}
	return true
}

func (t *fpIndex) slot(i uintptr) *fpIndexSlot {
	return (*fpIndexSlot)(add(t.slots.Load(), (i&(fpIndexSlots-1))*unsafe.Sizeof(fpIndexSlot{})))
}

// matches reports whether the filled slot s holds phys, key and flag.
func (s *fpIndexSlot) matches(phys []uintptr, key uintptr, flag bool) bool {
	if s.key != key || s.flag != flag || int(s.n) != len(phys) {
		return false
	}
	base := fpIndexBase()
	for i, pc := range phys {
		if base+uintptr(s.pcs[i]) != pc {
			return false
		}
	}
	return true
}

// prefetch starts fetching the lines that hold a stack of n frames in
// the slot where a lookup of hash h begins, if the index can hold such a
// stack: the stack is most likely there.
func (t *fpIndex) prefetch(h uintptr, n int) {
	if n > fpIndexPCs || t.slots.Load() == nil {
		return
	}
	s := t.slot(h | 1)
	for off := uintptr(0); off < unsafe.Offsetof(s.pcs)+uintptr(n)*4; off += 64 {
		sys.Prefetch(uintptr(unsafe.Pointer(s)) + off)
	}
}

// lookup returns the slot of phys, key and flag, whose hash is h, and
// fpIndexFound; or says whether insert would find room for it.
func (t *fpIndex) lookup(h uintptr, phys []uintptr, key uintptr, flag bool) (*fpIndexSlot, fpIndexStatus) {
	if len(phys) > fpIndexPCs {
		return nil, fpIndexFull
	}
	if t.slots.Load() == nil {
		return nil, fpIndexRoom
	}
	h |= 1
	for i := uintptr(0); i < fpIndexProbe; i++ {
		s := t.slot(h + i)
		sh := s.hash.Load()
		if sh == 0 {
			return nil, fpIndexRoom
		}
		if sh == h && s.ready.Load() != 0 && s.matches(phys, key, flag) {
			return s, fpIndexFound
		}
	}
	return nil, fpIndexFull
}

// insert adds phys, key and flag, whose hash is h, mapped to b, and
// reports whether it did.
func (t *fpIndex) insert(h uintptr, phys []uintptr, key uintptr, flag bool, b *bucket) bool {
	if !fpIndexFits(phys) {
		return false
	}
	if t.slots.Load() == nil {
		// sysAlloc returns whole pages, so the slots are line-aligned.
		fpMapOnce(&t.slots, &t.lock, fpIndexSlots*unsafe.Sizeof(fpIndexSlot{}), "heap profile stack index")
	}
	h |= 1
	base := fpIndexBase()
	for i := uintptr(0); i < fpIndexProbe; i++ {
		s := t.slot(h + i)
		if !s.hash.CompareAndSwap(0, h) {
			continue
		}
		s.key = key
		s.b = b
		s.n = uint16(len(phys))
		s.flag = flag
		for j, pc := range phys {
			s.pcs[j] = uint32(pc - base)
		}
		s.ready.Store(1)
		return true
	}
	return false
}

// find returns the bucket of phys, key and flag, whose hash is h, from the
// index or else from tab, where an earlier sighting put them, and moves
// them from tab into the index if it has room. slow reports that the stack
// must take the slow path; found, that either holds the stack.
func (t *fpIndex) find(tab *fpStackTab, h uintptr, phys []uintptr, key uintptr, flag bool) (b *bucket, slow, found bool) {
	s, st := t.lookup(h, phys, key, flag)
	if st == fpIndexFound {
		return s.b, false, true
	}
	e := tab.lookup(h, phys, key, flag)
	if e == nil {
		return nil, false, false
	}
	if !e.slow && st == fpIndexRoom {
		// Seen before: a stack the program samples again.
		t.insert(h, phys, key, flag, e.bucket)
	}
	return e.bucket, e.slow, true
}
