// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Memory for heap profile buckets, filled in batches, on huge pages.
//
// The heap profile allocates a bucket for each distinct stack it records
// and never frees it. A program that keeps meeting new stacks (a fresh
// process, a short-lived program, a test run with -memprofile) spends
// most of a new stack's cost on the new memory itself: persistentalloc
// hands out pages of its 256 KB chunks, and each page faults on its first
// write, one fault for every ten buckets or so. memProfBucketAlloc gives
// the heap profile's buckets chunks of their own:
//
//   - The first chunk is 256 KB, left to fault page by page as before, so
//     that a program whose profile stays small (at the default rate, a
//     few hundred buckets) does not become resident in memory it would
//     not touch.
//   - Later chunks are a huge page each (physHugePageSize, 2 MB on
//     amd64), aligned and marked for transparent huge pages
//     (sysHugePage, madvise(MADV_HUGEPAGE) on Linux) as the runtime marks
//     its page allocator's metadata. The kernel then maps 2 MB of buckets
//     with one fault and one TLB entry instead of 512 of each. Both
//     matter: a sample's lookups land on buckets all over the profile,
//     and a TLB miss walks the page tables (on a virtual machine, the
//     host's too), as each new 4 KB page costs its fault. A program
//     whose buckets outgrow the first chunk is resident in up to one
//     huge page more than its buckets.
//   - The runtime asks the kernel to fill each later chunk in one call
//     (memProfPopulate: on Linux, madvise(MADV_POPULATE_WRITE), since
//     5.14). Where huge pages are not available this still replaces a
//     fault per page; where they are, it takes the one fault up front.
//
// Where the system has no huge pages, where GODEBUG=disablethp=1 asks the
// runtime not to use them, or where an aligned chunk cannot be mapped,
// later chunks are 256 KB, filled where the kernel can. Buckets are
// allocated under profInsertLock (stkbucket), which also serializes this
// allocator.

package runtime

import "unsafe"

// memProfBucketChunk is the size of the first chunk buckets are carved
// from, and of later ones where there are no huge pages.
const memProfBucketChunk = 256 << 10

// memProfBucketHugeMax is the largest huge page a chunk is made of: on
// kernels with larger base pages, huge pages are 32 MB to 512 MB.
const memProfBucketHugeMax = 4 << 20

var memProfBuckets struct {
	base      uintptr // current chunk (persistent memory: no write barrier)
	size      uintptr // its size
	off       uintptr // bytes of it handed out
	chunks    uintptr // chunks allocated
	populated uintptr // chunks the kernel filled
	huge      uintptr // chunks marked for huge pages
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
	if a.off+size > a.size {
		systemstack(memProfBucketChunkNew)
	}
	p := unsafe.Pointer(a.base + a.off)
	a.off += size
	memstats.other_sys.add(-int64(size))
	memstats.buckhash_sys.add(int64(size))
	return p
}

// memProfBucketChunkNew maps the next chunk of memProfBuckets. It runs on
// the system stack, under profInsertLock.
func memProfBucketChunkNew() {
	a := &memProfBuckets
	var v unsafe.Pointer
	n := uintptr(memProfBucketChunk)
	if a.chunks > 0 {
		if v, n = memProfBucketHugeChunk(); v != nil {
			a.huge++
		} else {
			n = memProfBucketChunk
		}
	}
	if v == nil {
		v = sysAlloc(n, &memstats.other_sys, "heap profile buckets")
		if v == nil {
			throw("runtime: cannot allocate memory")
		}
	}
	if a.chunks > 0 && memProfPopulate(v, n) {
		a.populated++
	}
	a.base, a.size, a.off = uintptr(v), n, 0
	a.chunks++
}

// memProfBucketHugeChunkSize returns the size of a chunk made of a huge
// page, or 0 if chunks are not.
func memProfBucketHugeChunkSize() uintptr {
	h := physHugePageSize
	if h == 0 || h > memProfBucketHugeMax || debug.disablethp != 0 {
		return 0
	}
	return h
}

// memProfBucketHugeChunk maps a chunk of one huge page, aligned to it and
// marked for huge pages, accounted to other_sys like sysAlloc's, and
// returns it and its size, or nil.
func memProfBucketHugeChunk() (unsafe.Pointer, uintptr) {
	h := memProfBucketHugeChunkSize()
	if h == 0 {
		return nil, 0
	}
	v, n := sysReserveAligned(nil, h, h, "heap profile buckets")
	if v == nil {
		return nil, 0
	}
	if n > h {
		// Already aligned, the reservation kept its extra page: trim it
		// as sysReserveAligned trims the others.
		if asanenabled {
			lsanunregisterrootregion(v, n)
			lsanregisterrootregion(v, h)
		}
		sysFreeOS(add(v, h), n-h)
	}
	sysMap(v, h, &memstats.other_sys, "heap profile buckets")
	sysUsed(v, h, h)
	sysHugePage(v, h)
	return v, h
}
