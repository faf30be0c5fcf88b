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
	t.Logf("heap at %#x, first chunk below %#x", heap, hi)
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

// TestLineageLowTop: the first chunk ends below a randomized heap that
// starts under the fixed hint, and at the hint otherwise.
func TestLineageLowTop(t *testing.T) {
	const mb = 1 << 20
	hint := uintptr(runtime.LineageLowHint)
	if hint == 0 {
		t.Skip("no low lineage memory on 32-bit platforms")
	}
	for _, c := range []struct{ heap, want uintptr }{
		{0xc000000000, hint},         // not randomized
		{0x7a3d5c000000, hint},       // randomized, above the hint
		{hint, hint},                 // at it
		{0x20ec400000, 0x20ec400000}, // randomized below it (a CI failure: 0x20ec6e8d98)
		{0x20ec4f0000, 0x20ec400000}, // rounded down to a chunk
		{hint - mb/2, hint - mb},     // just below it
		{64 * mb, 64 * mb},           // the lowest it leaves room under
		{64*mb - 1, hint},            // too low to leave room
		{0, hint},                    // no heap found
	} {
		if got := runtime.LineageLowTop(c.heap); got != c.want {
			t.Errorf("LineageLowTop(%#x) = %#x, want %#x", c.heap, got, c.want)
		}
	}
}
