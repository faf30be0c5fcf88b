// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestLineageLowMemory: the registry's blocks and the regions lie in the
// low chunks, below the heap, where a core cut short keeps them.
func TestLineageLowMemory(t *testing.T) {
	needLineage(t)
	lo, hi := runtime.LineageLowRange()
	if lo == hi {
		t.Skip("lineage memory comes from persistentalloc on this platform or build")
	}
	done := make(chan struct{})
	for range 200 { // more than one block's records
		go func() { <-done }()
	}
	defer close(done)
	heap := uintptr(unsafe.Pointer(new([64]byte)))
	blocks, regions := runtime.LineageMemory()
	if len(blocks) < 2 || len(regions) == 0 {
		t.Fatalf("%d blocks, %d regions; want at least 2 and 1", len(blocks), len(regions))
	}
	for _, l := range []struct {
		what  string
		addrs []uintptr
	}{{"block", blocks}, {"region", regions}} {
		for _, a := range l.addrs {
			if a < lo || a >= hi || a >= heap {
				t.Errorf("%s at %#x: want it in [%#x, %#x), below the heap (%#x)", l.what, a, lo, hi, heap)
			}
		}
	}
}
