// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMemProfBucketAlloc checks the heap profile's bucket memory across
// two new chunks: aligned, disjoint blocks, zero when handed out, each
// accounted to the profile buckets' memory once; chunks after the first
// made of a huge page, aligned to it and marked for huge pages, where the
// system has them; and where the kernel fills pages on request (Linux
// 5.14: MADV_POPULATE_WRITE), new chunks after the first filled.
func TestMemProfBucketAlloc(t *testing.T) {
	const size = 408
	huge := runtime.MemProfBucketHugeChunkSize()
	n := int((runtime.MemProfBucketChunk+2*max(huge, runtime.MemProfBucketChunk))/size + 1)
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

	// Every chunk after the process's first.
	later := r.Bases
	sizes := r.Sizes
	if r.Chunks[0] == 0 {
		if sizes[0] != runtime.MemProfBucketChunk {
			t.Errorf("the first chunk is %d bytes, want %d", sizes[0], runtime.MemProfBucketChunk)
		}
		later, sizes = later[1:], sizes[1:]
	}
	if got := r.Huge[1] - r.Huge[0]; huge != 0 && got != uintptr(len(later)) || huge == 0 && got != 0 {
		t.Errorf("%d of %d later chunks marked for huge pages (huge page size %d)", got, len(later), huge)
	}
	for i, base := range later {
		switch {
		case huge == 0 && sizes[i] != runtime.MemProfBucketChunk:
			t.Errorf("chunk at %#x is %d bytes, want %d", base, sizes[i], runtime.MemProfBucketChunk)
		case huge != 0 && (sizes[i] != huge || base%huge != 0):
			t.Errorf("chunk at %#x is %d bytes, want %d aligned to it", base, sizes[i], huge)
		case huge != 0 && runtime.GOOS == "linux":
			flags, err := vmFlags(base)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(flags, "hg") {
				t.Errorf("chunk at %#x: VmFlags %v, want hg (MADV_HUGEPAGE)", base, flags)
			}
		}
	}
	if runtime.MemProfBucketHugeChunkSizeTHPOff() != 0 {
		t.Error("with GODEBUG=disablethp=1, chunks are still made of huge pages")
	}
}

// vmFlags returns the VmFlags that /proc/self/smaps lists for the mapping
// holding addr.
func vmFlags(addr uintptr) ([]string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(rest), nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no mapping in /proc/self/smaps holds %#x", addr)
}
