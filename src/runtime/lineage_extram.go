// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import "unsafe"

// A C-created thread that calls into Go keeps its extra M between calls:
// dropm runs only when the thread exits (pthread key destructor), so the
// region stays active, with the thread's tid, while the thread runs C code
// between callbacks. Region.cur must say what the thread runs (lineage ABI
// section 7), and between callbacks that is no goroutine: the callback
// goroutine is parked as _Gdeadextra in all but name. Without this, samples
// taken in C code on such a thread were attributed to the callback
// goroutine.
//
// cgocallbackg calls lineageExtraInGo when the callback enters Go and when
// it returns to C with no Go frames left above it (isExtraInC set). needm
// sets cur for the first callback already; this sets it for the later ones.

// lineageExtraInGo publishes whether mp, an extra M, runs its callback
// goroutine (inGo) or C code. Only mp's own thread writes its region's cur.
//
//go:nosplit
func lineageExtraInGo(mp *m, inGo bool) {
	var cur uint64
	if inGo && mp.curg != nil {
		cur = uint64(uintptr(unsafe.Pointer(mp.curg.lineage)))
	}
	mp.lineage.cur = cur
}
