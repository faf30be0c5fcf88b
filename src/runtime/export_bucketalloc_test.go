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
}

// MemProfBucketAlloc allocates n blocks of size bytes as newBucket
// allocates a heap profile bucket, and fills each with ones.
func MemProfBucketAlloc(n int, size uintptr) MemProfBucketAllocRun {
	r := MemProfBucketAllocRun{Zeroed: true, Addrs: make([]uintptr, 0, n)} // no allocation under the lock
	lock(&profInsertLock)
	r.Chunks[0], r.Populated[0] = memProfBuckets.chunks, memProfBuckets.populated
	before := memstats.buckhash_sys.load()
	for range n {
		p := memProfBucketAlloc(size)
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
	r.Chunks[1], r.Populated[1] = memProfBuckets.chunks, memProfBuckets.populated
	unlock(&profInsertLock)
	return r
}

const MemProfBucketChunk = memProfBucketChunk

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
