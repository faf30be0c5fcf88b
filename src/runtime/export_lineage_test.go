// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// LineageHeaderAddr is where the lineage ABI header lives. Tests take only
// this address from the runtime and read everything else through the
// header's offsets, as an external reader would.
func LineageHeaderAddr() uintptr { return uintptr(unsafe.Pointer(&lineageABI)) }

// LineageTextStart is the main module's text start, which site offsets are
// relative to.
func LineageTextStart() uintptr { return firstmoduledata.text }

// LineageRecords reports how many lineage records were ever handed out: the
// used counts of the registry's blocks, which only grow.
func LineageRecords() int64 {
	var n int64
	b := (*lineageBlock)(unsafe.Pointer(uintptr(atomic.Load64(&lineageABI.blocks))))
	for ; b != nil; b = (*lineageBlock)(unsafe.Pointer(uintptr(b.next))) {
		n += int64(atomic.Load(&b.used))
	}
	return n
}

// AllgLen reports the number of g structs ever allocated.
func AllgLen() int {
	lock(&allglock)
	defer unlock(&allglock)
	return len(allgs)
}
