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
	return asyncPreemptFPReadyAt(ctxt.sigpc(), ctxt.sigsp(), ctxt.sigfp())
}

// asyncPreemptFPReadyAt is asyncPreemptFPReady for a function interrupted
// at pc with stack pointer sp and frame pointer fp.
//
// The record is in place when the frame is allocated (SP delta > 0) and fp
// points at it. Both conditions are needed: on arm64, before the prologue
// moves SP and after the epilogue has moved it back, the caller's frame
// pointer is one word below SP as well (the caller's record is in place),
// while the return address into the caller is only in LR, so a walk through
// asyncPreempt's record would skip the caller. On amd64 the frame pointer
// alone would do; the rule is the same on both.
func asyncPreemptFPReadyAt(pc, sp, fp uintptr) bool {
	if goarch.ArchFamily != goarch.AMD64 && goarch.ArchFamily != goarch.ARM64 {
		return true
	}
	f := findfunc(pc)
	if !f.valid() || funcMaxSPDelta(f) == 0 {
		return true
	}
	delta := funcspdelta(f, pc)
	if delta <= 0 {
		return false
	}
	var want uintptr
	if goarch.ArchFamily == goarch.AMD64 {
		// The record is just below the return address.
		want = sp + uintptr(delta) - goarch.PtrSize
	} else {
		// The record is one word below the SP of a set-up frame.
		want = sp - goarch.PtrSize
	}
	return fp == want
}
