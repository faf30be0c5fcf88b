// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Linking the frame-pointer chain of a cgo callback through C's frames.
//
// asmcgocall calls C with the frame pointer at its own frame record on the
// goroutine stack, curg.sched.bp (saved by gosave_systemstack_switch), so
// the outermost frame record of C code that keeps frame pointers holds
// that address. When C calls back, cgocallback runs cgocallbackg on the
// goroutine stack below a fake frame record built from curg.sched: its
// return PC is systemstack_switch+8 and its saved frame pointer was
// curg.sched.bp. That chain skips the C frames between the callback and
// the cgocall site, as gentraceback does, and external unwinders (perf,
// bpftrace, golineage) lose exactly the C frames a user of mixed C and Go
// wants to see.
//
// So crosscall2 passes its own frame record, which links to C's frame
// pointer as C left it, to cgocallback, which walks the chain from there
// on g0, before it switches to the goroutine stack (CGO_LINK_WALK in
// cgocallbacklink_GOARCH.h, assembly for its cost: see doc/benchmarks.md).
// It walks only if curg.sched.bp is not 0 and cgocallback's SP is not
// below g0's stack, and follows at most cgoLinkMaxRecords records, each
// strictly above the last and below the g0 SP at which asmcgocall called
// C (so all on the thread's stack, between the callback and the cgocall
// site); the last one's saved frame pointer must be exactly
// curg.sched.bp. If the walk succeeds, the fake record's saved frame
// pointer is crosscall2's record, so the chain reads: callback frames,
// fake record, crosscall2 (return PC in cgo's export stub), the C frames,
// asmcgocall's record, cgocall, ..., goexit. Otherwise (C without frame
// pointers, a corrupted record, a callback on another stack, an extra M
// whose goroutine has sched.bp == 0) it is curg.sched.bp, as before.
// Either way cgocallback keeps a copy of curg.sched.bp and the address of
// the last C record (or 0) next to the fake record (the word offsets
// below). Records need not be aligned: loads from the stack are safe
// unaligned on amd64 and arm64, and the exact arrival at curg.sched.bp is
// the check that matters. Other callers of cgocallback (Windows'
// callbackasm1) pass a record that links nowhere.
//
// Three things depend on that choice:
//
//   - cgocallback restores curg.sched.bp on return from its copy, never
//     from the fake record.
//   - The last C record holds a pointer into the goroutine stack, which may
//     move during the callback. adjustframe (stack.go) adjusts the
//     pointer in it and the copy of curg.sched.bp. So the chain stays
//     exact after the stack grows, and C returns to asmcgocall with its
//     frame pointer on the current stack.
//   - The runtime's own frame-pointer unwinders must keep recording what
//     gentraceback records, which has no C frames. fpNextRecord steps from
//     a fake record (recognised by its return PC) straight to the copy of
//     curg.sched.bp, over any C frames.

package runtime

import (
	"internal/abi"
	"internal/goarch"
	"unsafe"
)

// cgoCallbackLinkArch reports whether cgocallback on this architecture
// keeps the words below next to its fake frame record.
const cgoCallbackLinkArch = goarch.ArchFamily == goarch.AMD64 || goarch.ArchFamily == goarch.ARM64

// Offsets from the fake frame record of the words cgocallback keeps in its
// frame on the goroutine stack (asm_amd64.s, asm_arm64.s): a copy of
// curg.sched.bp, and the address of the last C frame record if it linked
// them (or 0).
const (
	cgoLinkSchedBPOff = -8*goarch.IsAmd64 + 40*goarch.IsArm64
	cgoLinkLastCOff   = -16*goarch.IsAmd64 + 48*goarch.IsArm64
)

// cgoLinkMaxRecords bounds the walk over C's frame records
// (CGO_LINK_WALK in cgocallbacklink_GOARCH.h).
const cgoLinkMaxRecords = 64

// cgoLinkFakeFromSP is the offset of the fake frame record from the SP of
// cgocallback's frame on the goroutine stack.
const cgoLinkFakeFromSP = 40*goarch.IsAmd64 - 8*goarch.IsArm64

// cgoFakeRecordPC is the return PC of cgocallback's fake frame record:
// curg.sched.pc, which asmcgocall set with gosave_systemstack_switch.
//
//go:nosplit
func cgoFakeRecordPC() uintptr {
	return abi.FuncPCABI0(systemstack_switch) + 8
}

// adjustCgoCallbackLink adjusts, for copystack, the pointers into the
// goroutine stack that a cgocallback frame keeps outside the fake record's
// saved frame pointer (which adjustframe adjusts): the copy of
// curg.sched.bp, and the saved frame pointer of the last linked C record.
func adjustCgoCallbackLink(frame *stkframe, adjinfo *adjustinfo) {
	if !cgoCallbackLinkArch {
		return
	}
	fake := uintptr(int(frame.sp) + cgoLinkFakeFromSP)
	if last := *(*uintptr)(unsafe.Add(unsafe.Pointer(fake), cgoLinkLastCOff)); last != 0 {
		adjustpointer(adjinfo, unsafe.Pointer(last))
	}
	adjustpointer(adjinfo, unsafe.Add(unsafe.Pointer(fake), cgoLinkSchedBPOff))
}

// fpNextRecord returns the frame pointer saved in the frame record at fp,
// whose return PC is pc, as the runtime's frame-pointer unwinders follow
// it: from cgocallback's fake record it skips any linked C frames.
//
//go:nosplit
func fpNextRecord(fp, pc uintptr) uintptr {
	if cgoCallbackLinkArch && pc == cgoFakeRecordPC() {
		return *(*uintptr)(unsafe.Add(unsafe.Pointer(fp), cgoLinkSchedBPOff))
	}
	return *(*uintptr)(unsafe.Pointer(fp))
}
