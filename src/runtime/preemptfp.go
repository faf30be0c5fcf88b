// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build unix

package runtime

import "internal/goarch"

// Asynchronous preemption and frame pointers.
//
// asyncPreempt saves the interrupted frame pointer in its own frame record,
// so a frame-pointer walk from a preempted goroutine continues with the
// record of the interrupted function. In a prologue or epilogue, that
// function's record does not exist yet (or any more) and the frame pointer
// is still its caller's: the walk would silently skip the caller's frame.
// Such a PC is not worth preempting at; the signal is retried at another.
// Frameless leaf functions have no record to wait for and stay preemptible
// (a tight loop must be); there a frame-pointer walk misses their caller,
// as for any frameless leaf (doc/fp-boundaries.md).

// asyncPreemptFPReady reports whether the function interrupted at ctxt's PC
// has its frame record in place, with the frame pointer pointing at it.
func asyncPreemptFPReady(ctxt *sigctxt) bool {
	if goarch.ArchFamily != goarch.AMD64 && goarch.ArchFamily != goarch.ARM64 {
		return true
	}
	pc, sp := ctxt.sigpc(), ctxt.sigsp()
	f := findfunc(pc)
	if !f.valid() || funcMaxSPDelta(f) == 0 {
		return true
	}
	var want uintptr
	if goarch.ArchFamily == goarch.AMD64 {
		// The record is just below the return address.
		want = sp + uintptr(funcspdelta(f, pc)) - goarch.PtrSize
	} else {
		// The record is one word below the SP of a set-up frame.
		want = sp - goarch.PtrSize
	}
	return ctxt.sigfp() == want
}
