// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
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
// hint below the heap: a core holds them right after the executable's data,
// before the heap. Without a randomized heap base the heap starts at
// 0x00c0<<32, and the chunks end at 0x00bf<<32. With one (the default since
// Go 1.26), the heap starts at a random address below 1<<46 on amd64, below
// 0x00bf<<32 in about one process of 86; the chunks then end at the heap's
// lowest arena, read once when the first chunk is mapped, in schedinit. The
// hint only asks: where the kernel cannot honour it the chunk lands
// elsewhere, as persistentalloc's would, and nothing depends on the address.
// Builds with a sanitizer keep persistentalloc, whose memory the sanitizers'
// layouts expect.
//
// Like persistentalloc's, the memory is never freed (regions of exited Ms
// are reused, blocks live as long as the process).

const (
	// lineageLowChunk is the size of one mapping; the first chunk ends at
	// lineageLowTop(the heap's start) and later ones below it.
	lineageLowChunk = 1 << 20
	lineageLowHint  = 0x00bf << 32 * (goarch.PtrSize / 8) // 64-bit only
)

var lineageLow struct {
	lock mutex
	base uintptr // current chunk; 0 before the first
	off  uintptr // bytes used of it
	hint uintptr // where to ask for the next chunk
	top  uintptr // where the first chunk ends; 0 before it is known
}

// lineageLowTop returns where the first chunk should end for a heap that
// starts at heap: lineageLowHint, or the heap's start if that is lower.
// A heap in the lowest 64 chunks' worth of addresses leaves no room below
// it, and keeps lineageLowHint.
func lineageLowTop(heap uintptr) uintptr {
	if heap < 64*lineageLowChunk || heap >= lineageLowHint {
		return lineageLowHint
	}
	return alignDown(heap, lineageLowChunk)
}

// lineageHeapStart returns the lowest address of the heap's arenas, or,
// before the heap has one, where the first will be asked for.
func lineageHeapStart() (start uintptr) {
	systemstack(func() {
		// mheap_.lock guards both lists; it is taken on the system stack
		// only, and is ranked after sched.lock, which mcommoninit holds.
		lock(&mheap_.lock)
		start = ^uintptr(0)
		for _, ai := range mheap_.heapArenas {
			start = min(start, arenaBase(ai))
		}
		if len(mheap_.heapArenas) == 0 && mheap_.arenaHints != nil {
			start = mheap_.arenaHints.addr
		}
		unlock(&mheap_.lock)
	})
	return start
}

// lineageLowAlloc returns size zeroed bytes aligned to align (a power of
// two, at most a page) that are never freed.
func lineageLowAlloc(size, align uintptr) unsafe.Pointer {
	if GOOS != "linux" || goarch.PtrSize != 8 || size > lineageLowChunk/4 ||
		raceenabled || asanenabled || msanenabled {
		return persistentalloc(size, align, &memstats.other_sys)
	}
	l := &lineageLow
	if atomic.Loaduintptr(&l.top) == 0 {
		// The first chunk, mapped from mcommoninit(m0) in schedinit. Read
		// the heap's start before taking l.lock, a leaf.
		atomic.Casuintptr(&l.top, 0, lineageLowTop(lineageHeapStart()))
	}
	var p unsafe.Pointer
	// On the system stack: l.lock is a leaf, and the stack must not grow
	// while it is held (newm runs this on a goroutine's stack).
	systemstack(func() {
		lock(&l.lock)
		off := alignUp(l.off, align)
		if l.base == 0 || off+size > lineageLowChunk {
			if l.hint == 0 {
				l.hint = l.top
			}
			l.hint -= lineageLowChunk
			c := sysReserve(unsafe.Pointer(l.hint), lineageLowChunk, "lineage")
			if c == nil {
				unlock(&l.lock)
				return
			}
			sysMap(c, lineageLowChunk, &memstats.other_sys, "lineage")
			sysUsed(c, lineageLowChunk, lineageLowChunk)
			l.base, off = uintptr(c), 0
			if uintptr(c) != l.hint {
				// The kernel chose: ask below this chunk next time.
				l.hint = uintptr(c)
			}
		}
		l.off = off + size
		p = unsafe.Pointer(l.base + off)
		unlock(&l.lock)
	})
	if p == nil {
		return persistentalloc(size, align, &memstats.other_sys)
	}
	return p
}
