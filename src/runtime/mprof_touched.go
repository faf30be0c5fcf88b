// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Flushing only the memory profile buckets touched in a cycle.
//
// Upstream, mProf_FlushLocked visits every memory profile bucket twice per
// garbage collection (mProf_Flush after mark termination, mProf_PostSweep
// after sweeping) to move one future cycle into the published profile.
// A program with many allocation stacks pays for all of them at every
// cycle, whether or not they saw an allocation or a free, and the walk
// misses the cache on every bucket while it holds profMemActiveLock and
// one profMemFutureLock, which the allocations and frees of that cycle
// then wait for.
//
// Here each future cycle c keeps a list of the buckets whose future[c]
// may be non-zero: mProf_Malloc and mProf_Free put a bucket on it the
// first time they count into future[c], under profMemFutureLock[c], which
// also guards the list. mProf_FlushLocked walks the list instead of all
// buckets and empties it. Invariant: future[c] of a bucket is zero unless
// the bucket is on list c. A bucket on the list whose future[c] was
// cleared some other way (memProfileInternal's catch-up when no GC has
// run) adds zero when flushed, as upstream's walk does for every bucket
// it visits.
//
// A list is an array of bucket pointers in blocks, not a chain through
// the buckets: the flush knows the buckets ahead of the one it adds up
// and prefetches their records, so it waits for memory about once per
// eight buckets, not once per bucket, on a program with thousands of
// stacks. The blocks are kept and reused by the next cycles.

package runtime

import (
	"internal/goarch"
	"internal/runtime/sys"
	"unsafe"
)

// mProfFutureCycles is len(memRecord{}.future), which memRecord cannot
// name in its own fields.
const mProfFutureCycles = 3

// Compile-time check that mProfFutureCycles == len(memRecord{}.future).
var _ [len(memRecord{}.future) - mProfFutureCycles]struct{}
var _ [mProfFutureCycles - len(memRecord{}.future)]struct{}

// memRecordTouched records which lists a memory profile bucket is on.
type memRecordTouched struct {
	on [mProfFutureCycles]bool // on list c
}

// mProfTouchedBlock is a block of a list of touched buckets.
type mProfTouchedBlock struct {
	_    sys.NotInHeap
	next *mProfTouchedBlock
	n    uintptr
	b    [(4096 - 2*goarch.PtrSize) / goarch.PtrSize]*bucket
}

// mProfTouchedList is the list of buckets whose future[c] may be non-zero:
// the buckets in blocks first through cur; blocks after cur are empty,
// kept for reuse.
type mProfTouchedList struct {
	first, cur *mProfTouchedBlock
}

// mProfTouched[c] is the list of future cycle c. Guarded by
// profMemFutureLock[c].
var mProfTouched [mProfFutureCycles]mProfTouchedList

// mProfTouch puts b, whose memRecord is mr, on the list of future cycle c
// if it is not on it. The caller holds profMemFutureLock[c].
func mProfTouch(b *bucket, mr *memRecord, c uint32) {
	if mr.touched.on[c] {
		return
	}
	mr.touched.on[c] = true
	l := &mProfTouched[c]
	blk := l.cur
	if blk == nil || blk.n == uintptr(len(blk.b)) {
		if blk != nil && blk.next != nil {
			blk = blk.next
			blk.n = 0
		} else {
			nb := (*mProfTouchedBlock)(persistentalloc(unsafe.Sizeof(mProfTouchedBlock{}), goarch.PtrSize, &memstats.buckhash_sys))
			if blk == nil {
				l.first = nb
			} else {
				blk.next = nb
			}
			blk = nb
		}
		l.cur = blk
	}
	blk.b[blk.n] = b
	blk.n++
}

// mProfForEachTouched calls f for each bucket on the list of future cycle
// c, in order, prefetching the records of the buckets ahead, until f
// returns false. The caller holds profMemFutureLock[c].
func mProfForEachTouched(c uint32, f func(b *bucket, mr *memRecord) bool) {
	l := &mProfTouched[c]
	if l.cur == nil {
		return
	}
	for blk := l.first; ; blk = blk.next {
		bs := blk.b[:blk.n]
		mProfPrefetchStart(bs)
		for i, b := range bs {
			mProfPrefetchAhead(bs, i)
			if !f(b, b.mp()) {
				return
			}
		}
		if blk == l.cur {
			return
		}
	}
}

// mProfPrefetchDist is how many buckets ahead of the one a loop over
// buckets reads mProfPrefetchAhead fetches the record; it fetches the
// bucket's header, where the record's offset is, twice as far ahead.
const mProfPrefetchDist = 8

// mProfPrefetchStart prefetches the headers of the first buckets of bs,
// before a loop over bs that calls mProfPrefetchAhead.
func mProfPrefetchStart(bs []*bucket) {
	for _, b := range bs[:min(len(bs), 2*mProfPrefetchDist)] {
		sys.Prefetch(uintptr(unsafe.Pointer(b)))
	}
}

// mProfPrefetchAhead prefetches, at step i of a loop over bs, the header
// and the record of buckets ahead of bs[i].
func mProfPrefetchAhead(bs []*bucket, i int) {
	if j := i + 2*mProfPrefetchDist; j < len(bs) {
		sys.Prefetch(uintptr(unsafe.Pointer(bs[j])))
	}
	if j := i + mProfPrefetchDist; j < len(bs) {
		prefetchWrite(uintptr(unsafe.Pointer(bs[j].mp()))) // counted into: prefetchw.go
	}
}

// mProfFlushTouched adds future cycle c of every bucket on its list into
// the published profile, clears it and empties the list. The caller holds
// profMemActiveLock and profMemFutureLock[c].
func mProfFlushTouched(c uint32) {
	mProfForEachTouched(c, func(b *bucket, mr *memRecord) bool {
		mpc := &mr.future[c]
		mr.active.add(mpc)
		*mpc = memRecordCycle{}
		mr.touched.on[c] = false
		return true
	})
	l := &mProfTouched[c]
	if l.first != nil {
		l.first.n = 0
		l.cur = l.first
	}
}
