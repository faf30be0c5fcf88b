// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Per-P counts of sampled allocations.
//
// mProf_Malloc counts each sampled allocation into future cycle C+2 of its
// bucket under profMemFutureLock[C+2], a global lock whose cache line, and
// the bucket's memRecord, it shares with the sweeper, which counts the
// frees of the same buckets into cycle C+1. With two Ps at a high sampling
// rate the two meet there on every sample.
//
// Instead each P counts its allocations in memProfPCounts, 8 slots of a
// bucket and a count, a bucket in the slot its hash picks; a sample whose
// slot another bucket holds is counted under the lock, as before. The
// slots are added to future cycle C+2 and emptied when the cycle ends:
// mProf_NextCycle, which runs with the world stopped, folds every P's
// counts before it advances the cycle, and (*p).destroy folds the counts of
// a P that goes away. A P adds to its counts with preemption disabled, so
// they always belong to the current cycle. A program whose samples come
// from a few stacks counts them all per P; one with thousands of stacks
// pays one more comparison a sample.
//
// Future cycle C+2 is read before the cycle ends only by memProfileInternal
// when the published profile is still empty (no collection has published
// anything yet), which then adds up every future cycle. So the Ps keep
// counts only once the published profile holds something
// (memProfPublished), which it does from then on: the published counts
// only grow. Until then mProf_Malloc counts under the lock, as upstream
// does, and every profile reads the same counts as upstream's.

package runtime

import "internal/runtime/atomic"

// memProfPSlots is the number of buckets a P counts for at a time.
const memProfPSlots = 8

// memProfPCounts is a P's counts of sampled allocations in the current
// cycle, not yet in its buckets' future[C+2].
type memProfPCounts struct {
	slots [memProfPSlots]memProfPSlot
}

// memProfPSlot counts the allocations of the bucket b, which hashes to it.
type memProfPSlot struct {
	b      *bucket
	allocs uintptr
}

// memProfPublished is set once the published (active) heap profile holds
// a non-zero count. It is never cleared.
var memProfPublished atomic.Bool

// mProf_MallocLocal counts a sampled allocation in b in the current P's
// counts and reports whether it did; if not, the caller counts it under
// profMemFutureLock.
func mProf_MallocLocal(b *bucket) bool {
	if !memProfPublished.Load() {
		return false
	}
	mp := acquirem()
	pp := mp.p.ptr()
	if pp == nil {
		releasem(mp)
		return false
	}
	s := &pp.memProfCounts.slots[b.hash%memProfPSlots]
	if s.b != b {
		if s.b != nil {
			// Taken by another bucket until the cycle ends.
			releasem(mp)
			return false
		}
		s.b = b
	}
	s.allocs++
	releasem(mp)
	return true
}

// memProfPFold adds pp's counts to future cycle C+2 of their buckets and
// clears them. The world must be stopped.
func memProfPFold(pp *p) {
	c := &pp.memProfCounts
	index := (mProfCycle.read() + 2) % uint32(len(memRecord{}.future))
	lock(&profMemFutureLock[index])
	for i := range c.slots {
		s := &c.slots[i]
		if s.b == nil {
			continue
		}
		mr := s.b.mp()
		mr.future[index].allocs += s.allocs
		mProfTouch(s.b, mr, index) // mprof_touched.go
		*s = memProfPSlot{}
	}
	unlock(&profMemFutureLock[index])
}

// memProfPFoldAll folds the counts of every P. The world must be stopped.
func memProfPFoldAll() {
	for _, pp := range allp {
		memProfPFold(pp)
	}
}

// memProfNotePublished sets memProfPublished if flushing future cycle c
// will make the published profile non-empty. The caller holds
// profMemActiveLock and profMemFutureLock[c].
func memProfNotePublished(c uint32) {
	if memProfPublished.Load() {
		return
	}
	for b := mProfTouched[c]; b != nil; {
		mr := b.mp()
		if f := &mr.future[c]; f.allocs != 0 || f.frees != 0 {
			memProfPublished.Store(true)
			return
		}
		b = mr.touched.next[c]
	}
}
