// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// LineageLowRange is where lineageLowAlloc asks for its first chunks:
// [lo, hi), below the heap's start as this process found it. It is empty
// where lineageLowAlloc keeps persistentalloc.
func LineageLowRange() (lo, hi uintptr) {
	if GOOS != "linux" || unsafe.Sizeof(uintptr(0)) != 8 || raceenabled || asanenabled || msanenabled {
		return 0, 0
	}
	hi = atomic.Loaduintptr(&lineageLow.top)
	return hi - 64*lineageLowChunk, hi
}

// LineageLowTop is lineageLowTop, where the first chunk ends for a heap
// that starts at heap, and LineageLowHint is the address it ends at for a
// heap that is not randomized.
func LineageLowTop(heap uintptr) uintptr { return lineageLowTop(heap) }

const LineageLowHint = lineageLowHint

// LineageMemory lists the addresses of the registry's blocks and of the
// regions.
func LineageMemory() (blocks, regions []uintptr) {
	b := (*lineageBlock)(unsafe.Pointer(uintptr(atomic.Load64(&lineageABI.blocks))))
	for ; b != nil; b = (*lineageBlock)(unsafe.Pointer(uintptr(b.next))) {
		blocks = append(blocks, uintptr(unsafe.Pointer(b)))
	}
	r := (*lineageRegion)(unsafe.Pointer(uintptr(atomic.Load64(&lineageABI.regions))))
	for ; r != nil; r = (*lineageRegion)(unsafe.Pointer(uintptr(r.next))) {
		regions = append(regions, uintptr(unsafe.Pointer(r)))
	}
	return blocks, regions
}
