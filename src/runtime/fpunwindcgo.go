// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// Frame-pointer unwinding with cgo on the stack.
//
// The execution tracer, the block and mutex profilers, the heap and
// goroutine profiles and the lineage creation stacks unwind with frame
// pointers, and all of them decide between that and the slow path with
// fpUnwindNeedsCgoTraceback. Upstream fell back to gentraceback whenever an M had cgo frames
// on its stack (m.hasCgoOnStack), because the Go frames of a cgo callback
// used to link to C's frame pointer. cgocallback now links those frames to
// the goroutine's frames at the cgocall site (or ends the chain on an extra
// M), crosscall2 clears the C frame pointer once it is saved, and sigtramp
// does the same for signal handlers (see doc/fp-boundaries.md). So the frame
// pointer walk yields exactly gentraceback's physical frames with cgo on the
// stack too. When a callback's C frames keep frame pointers, cgocallbackg
// links the chain through them (cgocallbacklink.go); the runtime's walkers
// step over them with fpNextRecord, as gentraceback does.
//
// One difference remains: gentraceback asks a traceback function registered
// with SetCgoTraceback for the C frames of each cgo call on the stack, which
// a frame-pointer walk cannot see. Only then is the slow path required.

// fpUnwindNeedsCgoTraceback reports whether a stack on mp must be unwound
// with gentraceback so that a registered cgo traceback function can add its
// C frames. mp may be nil.
func (mp *m) fpUnwindNeedsCgoTraceback() bool {
	return cgoTraceback != nil && mp != nil && mp.hasCgoOnStack()
}
