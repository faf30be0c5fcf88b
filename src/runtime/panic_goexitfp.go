// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import "internal/goarch"

// When a deferred call that Goexit runs panics, and that panic is recovered
// in a frame above Goexit, recovery cannot unwind past the pending Goexit:
// it resumes Goexit's defer loop instead, at the _panic's startPC and
// startSP. Upstream then rebuilt the frame pointer from the recovering
// frame's fp, which belongs to a frame further up the stack. Goexit and the
// deferred calls it ran next had a frame-pointer chain that skipped every
// frame between Goexit and the recovering frame, so frame-pointer unwinders
// (the tracer, the block and mutex profilers) recorded stacks that
// gentraceback does not (package sync's TestOnceFuncGoexit: 3 frames where
// gentraceback has 9).
//
// goexitResumeFP returns what recovery calls fp for the frame it resumes at
// pc and sp: that frame's caller's SP, from the function's SP delta at pc.
// On amd64 recovery derives the frame pointer from it as for any frame; on
// arm64 the frame pointer comes from sp alone.

// goexitResumeFP returns the caller SP of the function frame that is
// running pc with stack pointer sp.
func goexitResumeFP(pc, sp uintptr) uintptr {
	f := findfunc(pc)
	if !f.valid() {
		throw("recovery: Goexit resume PC not in a function")
	}
	fp := sp + uintptr(funcspdelta(f, pc))
	if !usesLR {
		fp += goarch.PtrSize // the return address
	}
	return fp
}
