// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"slices"
	"testing"
)

// TestMemProfBucketAlloc checks the heap profile's bucket memory across
// two new chunks: aligned, disjoint blocks, zero when handed out, each
// accounted to the profile buckets' memory once; and where the kernel
// fills pages on request (Linux 5.14: MADV_POPULATE_WRITE), new chunks
// after the first filled.
func TestMemProfBucketAlloc(t *testing.T) {
	const size = 408
	n := 2*runtime.MemProfBucketChunk/size + 1
	r := runtime.MemProfBucketAlloc(n, size)
	if !r.Zeroed {
		t.Error("a block was not zero when handed out")
	}
	if want := int64(n * size); r.Accounted != want {
		t.Errorf("the profile buckets' memory grew by %d bytes, want %d", r.Accounted, want)
	}
	addrs := slices.Clone(r.Addrs)
	slices.Sort(addrs)
	for i, a := range addrs {
		if a%8 != 0 {
			t.Errorf("block at %#x is not 8-byte aligned", a)
		}
		if i > 0 && a-addrs[i-1] < size {
			t.Errorf("blocks at %#x and %#x overlap", addrs[i-1], a)
		}
	}
	newChunks := r.Chunks[1] - r.Chunks[0]
	if newChunks < 2 {
		t.Fatalf("%d blocks of %d bytes took %d new chunks, want at least 2", n, size, newChunks)
	}
	if r.Populated[1] >= r.Chunks[1] {
		t.Errorf("%d of %d chunks filled: the first must fault page by page", r.Populated[1], r.Chunks[1])
	}
	if runtime.MemProfPopulateWorks() && r.Populated[1]-r.Populated[0] != newChunks {
		t.Errorf("%d of %d new chunks filled, want all", r.Populated[1]-r.Populated[0], newChunks)
	}
}
