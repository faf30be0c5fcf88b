// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the test of the heap profile's bucket memory
// (mprof_bucketalloc_test.go).

package runtime

import "unsafe"

// MemProfBucketAllocRun is what MemProfBucketAlloc reports.
type MemProfBucketAllocRun struct {
	Addrs             []uintptr
	Zeroed            bool       // every block was zero when handed out
	Accounted         int64      // change of the profile buckets' memory stat
	Chunks, Populated [2]uintptr // before and after
	Huge              [2]uintptr // chunks marked for huge pages, before and after
	Bases, Sizes      []uintptr  // the new chunks, in order
}

// MemProfBucketAlloc allocates n blocks of size bytes as newBucket
// allocates a heap profile bucket, and fills each with ones.
func MemProfBucketAlloc(n int, size uintptr) MemProfBucketAllocRun {
	// No allocation under the lock.
	r := MemProfBucketAllocRun{Zeroed: true, Addrs: make([]uintptr, 0, n), Bases: make([]uintptr, 0, n), Sizes: make([]uintptr, 0, n)}
	lock(&profInsertLock)
	r.Chunks[0], r.Populated[0], r.Huge[0] = memProfBuckets.chunks, memProfBuckets.populated, memProfBuckets.huge
	before := memstats.buckhash_sys.load()
	for range n {
		chunks := memProfBuckets.chunks
		p := memProfBucketAlloc(size)
		if memProfBuckets.chunks != chunks {
			r.Bases = append(r.Bases, memProfBuckets.base)
			r.Sizes = append(r.Sizes, memProfBuckets.size)
		}
		b := unsafe.Slice((*byte)(p), size)
		for i := range b {
			if b[i] != 0 {
				r.Zeroed = false
			}
			b[i] = 0xff
		}
		r.Addrs = append(r.Addrs, uintptr(p))
	}
	r.Accounted = int64(memstats.buckhash_sys.load() - before)
	r.Chunks[1], r.Populated[1], r.Huge[1] = memProfBuckets.chunks, memProfBuckets.populated, memProfBuckets.huge
	unlock(&profInsertLock)
	return r
}

const MemProfBucketChunk = memProfBucketChunk

// MemProfBucketHugeChunkSize returns the size of the chunks made of a huge
// page, or 0 if chunks are not.
func MemProfBucketHugeChunkSize() uintptr { return memProfBucketHugeChunkSize() }

// MemProfBucketHugeChunkSizeTHPOff returns memProfBucketHugeChunkSize with
// GODEBUG=disablethp=1.
func MemProfBucketHugeChunkSizeTHPOff() uintptr {
	old := debug.disablethp
	debug.disablethp = 1
	defer func() { debug.disablethp = old }()
	return memProfBucketHugeChunkSize()
}

// MemProfPopulateWorks reports whether memProfPopulate fills a new
// mapping on this system.
func MemProfPopulateWorks() bool {
	const n = 64 << 10
	var ok bool
	systemstack(func() {
		v := sysAllocOS(n, "test")
		if v == nil {
			return
		}
		ok = memProfPopulate(v, n)
		sysFreeOS(v, n)
	})
	return ok
}
