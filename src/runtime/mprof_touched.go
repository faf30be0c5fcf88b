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

package runtime

// mProfFutureCycles is len(memRecord{}.future), which memRecord cannot
// name in its own fields.
const mProfFutureCycles = 3

// Compile-time check that mProfFutureCycles == len(memRecord{}.future).
var _ [len(memRecord{}.future) - mProfFutureCycles]struct{}
var _ [mProfFutureCycles - len(memRecord{}.future)]struct{}

// memRecordTouched links a memory profile bucket into mProfTouched.
type memRecordTouched struct {
	next [mProfFutureCycles]*bucket // next bucket on list c, while on[c]
	on   [mProfFutureCycles]bool    // on list c
}

// mProfTouched[c] heads the list of buckets whose future[c] may be
// non-zero. Guarded by profMemFutureLock[c].
var mProfTouched [mProfFutureCycles]*bucket

// mProfTouch puts b, whose memRecord is mr, on the list of future cycle c
// if it is not on it. The caller holds profMemFutureLock[c].
func mProfTouch(b *bucket, mr *memRecord, c uint32) {
	if mr.touched.on[c] {
		return
	}
	mr.touched.on[c] = true
	mr.touched.next[c] = mProfTouched[c]
	mProfTouched[c] = b
}

// mProfFlushTouched adds future cycle c of every bucket on its list into
// the published profile, clears it and empties the list. The caller holds
// profMemActiveLock and profMemFutureLock[c].
func mProfFlushTouched(c uint32) {
	b := mProfTouched[c]
	mProfTouched[c] = nil
	for b != nil {
		mr := b.mp()
		mpc := &mr.future[c]
		mr.active.add(mpc)
		*mpc = memRecordCycle{}
		next := mr.touched.next[c]
		mr.touched.next[c] = nil
		mr.touched.on[c] = false
		b = next
	}
}
