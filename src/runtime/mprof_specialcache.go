// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Per-P caches of heap profile specials.
//
// Every sampled allocation attaches a specialprofile to its object, and the
// sweeper frees it when the object dies. Both used to take the global
// mheap_.speciallock for each special (specialprofilealloc is a fixalloc),
// so at a high sampling rate the allocating goroutine and the background
// sweeper on another P met on that lock for every profiled object.
//
// Each P now keeps free profile specials in two lists linked through
// special.next: cur, holding ncur specials, and full, holding exactly
// specialProfBatch specials or none (the loaded and the previous magazine
// of a magazine allocator). A P allocates from cur; when cur is empty it
// swaps in full, or else takes a whole batch from the global list of full
// batches (specialProfFull), or else carves a batch out of the fixalloc.
// The sweeper frees into its P's cur; when cur holds a batch and full holds
// one too, full goes to the global list and cur becomes full. Specials flow
// mostly one way, from the P that sweeps to the P that allocates, so the
// global list is how they travel, as mcentral is to mcache: a whole batch at
// a time, one acquisition of mheap_.speciallock per specialProfBatch
// specials on each side.
//
// A batch on the global list is linked to the next one through the offset
// field of its first special, which a free special does not use. Specials
// are not in the Go heap, so the links need no write barriers.
//
// A P's cache is given back to the fixalloc when the P is destroyed
// (specialProfCacheFlush, from (*p).destroy). Sweeping without a P, which
// the runtime does not do today, frees to the fixalloc directly.
//
// The other cost of a profile special was adding it: addspecial walked the
// span's sorted list from its head. It now starts from the profile special
// last added to the span (mspan.specialHint), see below. Two more costs
// were lines every P writes, which the allocating P and the sweeper
// passed back and forth for each special:
//
//   - addspecial set the span's bit in its arena's pageSpecials, with an
//     atomic OR, and the sweeper cleared it with an atomic AND when the
//     span lost its last special. The bitmap tells markrootSpans which
//     spans hold finalizers, weak handles or cleanups, and it ignores
//     profile records: a profile record no longer sets the bit, and a
//     span whose bit is clear no longer has it cleared. markrootSpans also
//     stops visiting spans that hold only profile records.
//   - addspecial called ensureSwept, which registers with sweep.active by
//     a compare-and-swap on the word every sweeper updates for every span.
//     A profile record is added by malloc, with preemption disabled, to
//     the object it just allocated, whose span is swept (a cached or a new
//     span): addspecial skips ensureSwept for it.

package runtime

import "unsafe"

// specialProfBatch is the number of specials in a batch.
const specialProfBatch = 32

// specialProfCache is a P's cache of free profile specials.
type specialProfCache struct {
	cur  *specialprofile // free specials, linked through special.next
	ncur int32           // length of cur, at most specialProfBatch
	full *specialprofile // specialProfBatch free specials, or nil
}

// specialProfFull is the global list of full batches, guarded by
// mheap_.speciallock.
var specialProfFull struct {
	head *specialprofile
	n    int // batches
}

func specialProfNext(s *specialprofile) *specialprofile {
	return (*specialprofile)(unsafe.Pointer(s.special.next))
}

// specialProfAlloc returns a free profile special. It must be called on
// the system stack or with preemption disabled.
func specialProfAlloc() *specialprofile {
	mp := acquirem()
	pp := mp.p.ptr()
	if pp == nil {
		lock(&mheap_.speciallock)
		s := (*specialprofile)(mheap_.specialprofilealloc.alloc())
		unlock(&mheap_.speciallock)
		releasem(mp)
		return s
	}
	c := &pp.specialProfCache
	if c.ncur == 0 {
		if c.full != nil {
			c.cur, c.full = c.full, nil
		} else {
			c.cur = specialProfGetBatch()
		}
		c.ncur = specialProfBatch
	}
	s := c.cur
	c.cur = specialProfNext(s)
	c.ncur--
	// The next special was likely freed by the sweeper on another P:
	// start moving its line here before the next sample needs it.
	prefetchWrite(uintptr(unsafe.Pointer(c.cur))) // prefetchw.go
	releasem(mp)
	s.special.next = nil
	return s
}

// specialProfGetBatch returns a full batch, from the global list or, if it
// is empty, from the fixalloc.
func specialProfGetBatch() *specialprofile {
	lock(&mheap_.speciallock)
	if h := specialProfFull.head; h != nil {
		specialProfFull.head = (*specialprofile)(unsafe.Pointer(h.special.offset))
		specialProfFull.n--
		unlock(&mheap_.speciallock)
		h.special.offset = 0
		return h
	}
	var list *specialprofile
	for range specialProfBatch {
		s := (*specialprofile)(mheap_.specialprofilealloc.alloc())
		s.special.next = (*special)(unsafe.Pointer(list))
		list = s
	}
	unlock(&mheap_.speciallock)
	return list
}

// specialProfFree gives back a profile special that is no longer on any
// span's list.
func specialProfFree(s *specialprofile) {
	s.b = nil
	mp := acquirem()
	pp := mp.p.ptr()
	if pp == nil {
		lock(&mheap_.speciallock)
		mheap_.specialprofilealloc.free(unsafe.Pointer(s))
		unlock(&mheap_.speciallock)
		releasem(mp)
		return
	}
	c := &pp.specialProfCache
	if c.ncur == specialProfBatch {
		if c.full != nil {
			h := c.full
			lock(&mheap_.speciallock)
			h.special.offset = uintptr(unsafe.Pointer(specialProfFull.head))
			specialProfFull.head = h
			specialProfFull.n++
			unlock(&mheap_.speciallock)
		}
		c.full, c.cur, c.ncur = c.cur, nil, 0
	}
	s.special.next = (*special)(unsafe.Pointer(c.cur))
	c.cur = s
	c.ncur++
	releasem(mp)
}

// specialProfCacheFlush gives pp's cached specials back to the fixalloc.
// The world must be stopped, or pp must not be in use.
func specialProfCacheFlush(pp *p) {
	c := &pp.specialProfCache
	lock(&mheap_.speciallock)
	for _, l := range [...]*specialprofile{c.cur, c.full} {
		for s := l; s != nil; {
			next := specialProfNext(s)
			mheap_.specialprofilealloc.free(unsafe.Pointer(s))
			s = next
		}
	}
	unlock(&mheap_.speciallock)
	*c = specialProfCache{}
}

// Profile specials are added in allocation order, which within a span is
// mostly ascending address order between two sweeps, so the new special
// usually goes right after the last one added. At MemProfileRate=1 every
// object of a span has one, and walking the list from its head for each
// made adding one cost O(objects in the span).
//
// So a span remembers in specialHint the profile special last added to
// it, and addspecial starts its walk there when that special sorts before
// the new one. specialHint is nil or a special on the span's list: only
// the sweeper frees profile specials and it clears the hint when it
// sweeps the span, as do removespecial when it removes the hint and the
// span's initialization. Other kinds of specials are removed without
// looking at the hint, which never points to one of them.

// specialFindSplicePointHint is specialFindSplicePoint, starting from the
// span's hint when it may.
func (span *mspan) specialFindSplicePointHint(offset uintptr, kind byte) (**special, bool) {
	iter := &span.specials
	if h := span.specialHint; h != nil && (h.offset < offset || h.offset == offset && h.kind < kind) {
		iter = &h.next
	}
	for {
		s := *iter
		if s == nil {
			return iter, false
		}
		if offset == s.offset && kind == s.kind {
			return iter, true
		}
		if offset < s.offset || (offset == s.offset && kind < s.kind) {
			return iter, false
		}
		iter = &s.next
	}
}
