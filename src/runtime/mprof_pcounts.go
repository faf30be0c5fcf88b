// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Per-P counts of sampled allocations and of their frees.
//
// mProf_Malloc counts each sampled allocation into future cycle C+2 of its
// bucket under profMemFutureLock[C+2], a global lock whose cache line, and
// the bucket's memRecord, it shares with the sweeper, which counts the
// frees of the same buckets into cycle C+1. With two Ps at a high sampling
// rate the two meet there on every sample, and with thousands of stacks
// every count also misses the cache on its bucket's record.
//
// Instead each P counts in memProfPCounts:
//
//   - allocations: 8 slots of a bucket and a count, a bucket in the slot
//     its address picks, for the few stacks a program allocates from
//     most; and a log of up to 128 buckets for the rest, one entry a
//     sample;
//   - frees (mProf_FreeLocal, from the sweeper): a log of up to 128
//     buckets.
//
// A full log is added to its future cycle under the lock in one batch,
// which prefetches the buckets' records ahead of the loop, so neither a
// sample nor a free takes the lock or reads its bucket.
//
// The counts must reach their future cycle before anything reads it:
//
//   - mProf_NextCycle, which runs with the world stopped, folds every P's
//     counts before it advances the cycle. Allocations counted with
//     preemption disabled (as mallocgc does) and frees counted by the
//     sweep (which runs with preemption disabled, and only between one
//     mark termination and the next) therefore always belong to the
//     current cycle.
//   - mProf_PostSweep, which runtime.GC calls once sweeping is done to
//     publish future cycle C+1, first folds every P's frees: no P sweeps
//     then, so none adds to its log.
//   - (*p).destroy folds the counts of a P that goes away.
//
// Future cycle C+2 is read before the cycle ends only by memProfileInternal
// when the published profile is still empty (no collection has published
// anything yet), which then adds up every future cycle. So the Ps keep
// counts only once the published profile holds something
// (memProfPublished), which it does from then on: the published counts
// only grow. Until then mProf_Malloc counts under the lock, as upstream
// does, and every profile reads the same counts as upstream's.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// memProfPSlots is the number of buckets a P counts allocations for at a
// time, and memProfPLog the length of each of its logs: of the samples of
// the other buckets, and of frees.
const (
	memProfPSlots = 8
	memProfPLog   = 128
)

// memProfPCounts is a P's counts of the current cycle not yet in their
// buckets: sampled allocations, for future[C+2], and frees, for
// future[C+1].
type memProfPCounts struct {
	slots [memProfPSlots]memProfPSlot
	nlog  uintptr
	log   [memProfPLog]*bucket // one sample each
	nfree uintptr
	frees [memProfPLog]*bucket // one free each
}

// memProfPSlot counts the allocations of the bucket b, whose address
// picks it.
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
	c := &pp.memProfCounts
	// The address, not b.hash: the sample does not read its bucket.
	a := uintptr(unsafe.Pointer(b))
	s := &c.slots[(a>>3^a>>9^a>>15)%memProfPSlots]
	switch s.b {
	case b:
		s.allocs++
	case nil:
		s.b = b
		s.allocs = 1
	default:
		if c.nlog == memProfPLog {
			memProfPFoldLog(c)
		}
		c.log[c.nlog] = b
		c.nlog++
	}
	releasem(mp)
	return true
}

// memProfPFoldLog adds the samples in c's log to future cycle C+2 of their
// buckets and empties it. Preemption must be disabled, or the world
// stopped.
func memProfPFoldLog(c *memProfPCounts) {
	if c.nlog != 0 {
		memProfFoldBuckets(c.log[:c.nlog], 2, false)
		c.nlog = 0
	}
}

// memProfPFoldFrees adds the frees in c's log to future cycle C+1 of their
// buckets and empties it. The sweep must be done or be this P's.
func memProfPFoldFrees(c *memProfPCounts) {
	if c.nfree != 0 {
		memProfFoldBuckets(c.frees[:c.nfree], 1, true)
		c.nfree = 0
	}
}

// memProfFoldBuckets counts one allocation (or one free) in future cycle
// C+ahead of each bucket in log.
func memProfFoldBuckets(log []*bucket, ahead uint32, free bool) {
	mProfPrefetchStart(log) // mprof_touched.go
	index := (mProfCycle.read() + ahead) % uint32(len(memRecord{}.future))
	lock(&profMemFutureLock[index])
	for i, b := range log {
		mProfPrefetchAhead(log, i)
		mr := b.mp()
		if free {
			mr.future[index].frees++
		} else {
			mr.future[index].allocs++
		}
		mProfTouch(b, mr, index) // mprof_touched.go
	}
	unlock(&profMemFutureLock[index])
}

// mProf_FreeSampled counts the free of a sampled object of bucket b: in
// the current P's log, or else as upstream does.
func mProf_FreeSampled(b *bucket) {
	if !mProf_FreeLocal(b) {
		mProf_Free(b)
	}
}

// mProf_FreeLocal counts the free of a sampled object of bucket b in the
// current P's log and reports whether it did; if not, the caller counts it
// with mProf_Free. The sweep calls it with preemption disabled.
func mProf_FreeLocal(b *bucket) bool {
	if !memProfPublished.Load() {
		return false
	}
	pp := getg().m.p.ptr()
	if pp == nil {
		return false
	}
	c := &pp.memProfCounts
	if c.nfree == memProfPLog {
		memProfPFoldFrees(c)
	}
	c.frees[c.nfree] = b
	c.nfree++
	return true
}

// memProfPFoldFreesAll folds the frees of every P. Sweeping must be done,
// and the world cannot stop: the caller has disabled preemption.
func memProfPFoldFreesAll() {
	for _, pp := range allp {
		memProfPFoldFrees(&pp.memProfCounts)
	}
}

// memProfPFold adds pp's counts to future cycle C+2 of their buckets and
// clears them. The world must be stopped.
func memProfPFold(pp *p) {
	c := &pp.memProfCounts
	memProfPFoldLog(c)
	memProfPFoldFrees(c)
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
	mProfForEachTouched(c, func(b *bucket, mr *memRecord) bool {
		if f := &mr.future[c]; f.allocs != 0 || f.frees != 0 {
			memProfPublished.Store(true)
			return false
		}
		return true
	})
}
