// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Memory for heap profile buckets, filled in batches.
//
// The heap profile allocates a bucket for each distinct stack it records
// and never frees it. A program that keeps meeting new stacks (a fresh
// process, a short-lived program, a test run with -memprofile) spends
// most of a new stack's cost on the new memory itself: persistentalloc
// hands out pages of its 256 KB chunks, and each page faults on its first
// write, one fault for every ten buckets or so. memProfBucketAlloc gives
// the heap profile's buckets chunks of their own and asks the kernel to
// fill each new chunk's pages in one call (memProfPopulate: on Linux,
// madvise(MADV_POPULATE_WRITE), since 5.14), which costs a fraction of
// the faults it replaces. The first chunk is left to fault page by page,
// as before, so that a program whose profile stays small (at the default
// rate, a few hundred buckets) does not become resident in memory it
// would not touch. Where the kernel declines, pages fault as before.
//
// Buckets are allocated under profInsertLock (stkbucket), which also
// serializes this allocator.

package runtime

import "unsafe"

// memProfBucketChunk is the size of the chunks buckets are carved from.
const memProfBucketChunk = 256 << 10

var memProfBuckets struct {
	base      uintptr // current chunk (persistent memory: no write barrier)
	off       uintptr // bytes of it handed out
	chunks    uintptr // chunks allocated
	populated uintptr // chunks the kernel filled
}

// memProfBucketAlloc returns size bytes of zeroed persistent memory for a
// heap profile bucket. The caller holds profInsertLock.
func memProfBucketAlloc(size uintptr) unsafe.Pointer {
	assertLockHeld(&profInsertLock)
	size = alignUp(size, 8)
	if size > memProfBucketChunk/8 {
		return persistentalloc(size, 0, &memstats.buckhash_sys)
	}
	a := &memProfBuckets
	if a.base == 0 || a.off+size > memProfBucketChunk {
		var p uintptr
		systemstack(func() {
			v := sysAlloc(memProfBucketChunk, &memstats.other_sys, "heap profile buckets")
			if v != nil && a.chunks > 0 && memProfPopulate(v, memProfBucketChunk) {
				a.populated++
			}
			p = uintptr(v)
		})
		if p == 0 {
			throw("runtime: cannot allocate memory")
		}
		a.base, a.off = p, 0
		a.chunks++
	}
	p := unsafe.Pointer(a.base + a.off)
	a.off += size
	memstats.other_sys.add(-int64(size))
	memstats.buckhash_sys.add(int64(size))
	return p
}
