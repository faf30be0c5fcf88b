// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/goarch"
	"unsafe"
)

// Lineage memory that a cut core keeps.
//
// The registry's blocks and the per-M regions are how a reader outside
// the process finds every goroutine (doc/lineage-abi.md): without them, a
// core lists nothing. The kernel writes a core's memory in address order,
// and a core cut short (a full disk, a core size limit) keeps its low
// addresses. persistentalloc's chunks come from mmap with no address,
// which Linux places high, among the shared libraries and thread stacks,
// so they were the last bytes of a core and the first lost.
//
// lineageLowAlloc hands out that memory instead, from chunks mapped with a
// hint below the heap's first arena hint (0x00c0<<32 on 64-bit Linux): a
// core holds them right after the executable's data, before the heap. The
// hint only asks: where the kernel cannot honour it the chunk lands
// elsewhere, as persistentalloc's would, and nothing depends on the
// address. Builds with a sanitizer keep persistentalloc, whose memory the
// sanitizers' layouts expect.
//
// Like persistentalloc's, the memory is never freed (regions of exited Ms
// are reused, blocks live as long as the process).

const (
	// lineageLowChunk is the size of one mapping; its first chunk ends at
	// lineageLowHint and later ones below it.
	lineageLowChunk = 1 << 20
	lineageLowHint  = 0x00bf << 32 * (goarch.PtrSize / 8) // 64-bit only
)

var lineageLow struct {
	lock mutex
	base uintptr // current chunk; 0 before the first
	off  uintptr // bytes used of it
	hint uintptr // where to ask for the next chunk
}

// lineageLowAlloc returns size zeroed bytes aligned to align (a power of
// two, at most a page) that are never freed.
func lineageLowAlloc(size, align uintptr) unsafe.Pointer {
	if GOOS != "linux" || goarch.PtrSize != 8 || size > lineageLowChunk/4 ||
		raceenabled || asanenabled || msanenabled {
		return persistentalloc(size, align, &memstats.other_sys)
	}
	l := &lineageLow
	lock(&l.lock)
	off := alignUp(l.off, align)
	if l.base == 0 || off+size > lineageLowChunk {
		if l.hint == 0 {
			l.hint = lineageLowHint
		}
		l.hint -= lineageLowChunk
		p := sysReserve(unsafe.Pointer(l.hint), lineageLowChunk, "lineage")
		if p == nil {
			unlock(&l.lock)
			return persistentalloc(size, align, &memstats.other_sys)
		}
		sysMap(p, lineageLowChunk, &memstats.other_sys, "lineage")
		sysUsed(p, lineageLowChunk, lineageLowChunk)
		l.base, off = uintptr(p), 0
		if uintptr(p) != l.hint {
			// The kernel chose: ask below this chunk next time.
			l.hint = uintptr(p)
		}
	}
	l.off = off + size
	p := unsafe.Pointer(l.base + off)
	unlock(&l.lock)
	return p
}
