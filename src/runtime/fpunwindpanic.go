// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Frame-pointer unwinding of a panicking goroutine.
//
// A fault in a function that has no frame record (a frameless leaf: Go code
// without calls or locals, such as a closure around an intrinsified atomic
// operation) makes the signal handler inject a call to sigpanic at the
// faulting PC (sigctxt.pushCall). sigpanic's frame record then holds the
// faulting PC as its return address and the frame pointer of the leaf's
// caller, so a frame-pointer walk reads the leaf and then the caller of the
// leaf's caller: the return address into the leaf's caller lies at the
// leaf's SP, in no frame record. gentraceback finds it with the leaf's SP
// delta.
//
// A stack with sigpanic on it belongs to a goroutine that is panicking
// (sigpanic panics or throws), so the runtime's frame-pointer unwinders
// (tracer, block and mutex profiles, heap profile, goroutine profile,
// lineage creation stacks) take the slow path while a goroutine's _panic is
// set, and from the signal on: the signal handler sets gp.sig when it
// injects sigpanic, and recovery clears it when the last panic ends, while
// gopanic sets _panic only after its prologue, where the goroutine may be
// preempted and traced with sigpanic below it. Panics are rare, and the
// check is two loads.
//
// Found by GODEBUG=fpunwindcheck over upstream's sync/atomic tests
// (TestNilDeref) with the tracer on (misc/fpcheck/stdsuites.bash).

package runtime

// fpUnwindPanicking reports whether gp's stack may hold a frame the
// frame-pointer chain skips: gp is panicking, or a signal made it call
// sigpanic. gp may be nil.
func fpUnwindPanicking(gp *g) bool {
	return gp != nil && (gp._panic != nil || gp.sig != 0)
}
