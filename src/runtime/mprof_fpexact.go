// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Confirming a frame-pointer walk without the slow unwinder.
//
// The heap profiler trusts a physical stack only once it knows the walk
// read every return PC from the slot the slow unwinder reads it from. It
// used to learn that by running callers() on the stack's first sight and
// comparing, which with many distinct stacks (recursion from several call
// sites) was most of the profiler's cost. On amd64 the same fact follows
// from the frame sizes alone:
//
// The slow unwinder, at a frame whose return PC is pc and whose stack
// pointer is sp, reads the caller's return PC at sp+spdelta(pc), the word
// below its frame's top, spdelta(pc) being funcspdelta at pc. The walk
// reads it at rec+8, rec being the frame record the chain leads to. A
// callee's frame record lies at the top of its frame, right below its
// return address, so the frame's sp at the call is the callee's record
// plus 16. The two read the same slot if and only if
//
//	rec[i+1] - rec[i] == spdelta(phys[i]) + 8
//
// for the records rec[i] from which the walk read phys[i]. If that holds
// for every step, by induction from the walking function's own record
// (a compiled Go function with calls, whose record is at the top of its
// frame) each PC is read from the same address as by the slow unwinder,
// on a stack nobody else writes: the physical stacks are the same, not
// merely equal by chance. What the slow unwinder then records from them
// (skip, inline expansion, wrapper elision, where it stops) is what
// fpLogicalPCs computes; the differential tests hold the two to that.
//
// spdelta is a pcvalue decode, so it is cached per PC in a small
// direct-mapped table (fpSPDeltas): a first-seen stack made of PCs seen
// before costs its walk, a lookup per frame and its expansion. A step that
// does not match (a frame without a record at its top, an interrupted
// prologue, a frame past where the slow unwinder stops) sends the stack
// to the callers() comparison as before.

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
	"unsafe"
)

// fpExactByDelta reports whether fpStackExact can confirm walks on this
// architecture (frame records right below the return address).
const fpExactByDelta = goarch.ArchFamily == goarch.AMD64

// fpSPDeltas caches spdelta+PtrSize per return PC: an entry is pc<<16 |
// (spdelta+PtrSize)/PtrSize, 0 if empty. One 64-bit word per entry, so a
// racing store cannot tear what a lookup reads.
var fpSPDeltas [1 << 12]atomic.Uint64 // indexed by fpPCSlot

// fpSPDeltaSlot returns pc's slot of fpSPDeltas.
func fpSPDeltaSlot(pc uintptr) *atomic.Uint64 {
	return &fpSPDeltas[fpPCSlot(pc)]
}

// fpFrameDelta returns the distance between the frame record of the callee
// of the frame whose return PC is pc and the frame's own record, as the
// slow unwinder places them (spdelta(pc)+PtrSize), and false if pc has no
// function or the distance cannot be cached.
func fpFrameDelta(pc uintptr) (uintptr, bool) {
	slot := fpSPDeltaSlot(pc)
	if e := slot.Load(); e != 0 && uintptr(e>>16) == pc {
		return uintptr(e&0xffff) * goarch.PtrSize, true
	}
	if pc>>48 != 0 {
		return 0, false
	}
	f := findfunc(pc)
	if !f.valid() || f.pcsp == 0 {
		return 0, false
	}
	d := uintptr(funcspdelta(f, pc)) + goarch.PtrSize
	if int32(d) <= 0 || d/goarch.PtrSize > 0xffff {
		return 0, false
	}
	slot.Store(uint64(pc)<<16 | uint64(d/goarch.PtrSize))
	return d, true
}

// fpWalkRecords walks the frame pointer chain from fp as fpWalk does and
// stores into recs the address of the frame record from which each PC of
// phys is read. It returns false if the chain does not yield phys again.
//
//go:nosplit
func fpWalkRecords(fp, lo, hi uintptr, phys, recs []uintptr) bool {
	recs = recs[:len(phys)]
	for i := range phys {
		if fp == 0 || fp < lo || fp > hi-2*goarch.PtrSize || fp&(goarch.PtrSize-1) != 0 {
			return false
		}
		pc := *(*uintptr)(unsafe.Pointer(fp + goarch.PtrSize))
		if pc != phys[i] {
			return false
		}
		recs[i] = fp
		fp = fpNextRecord(fp, pc)
	}
	return true
}

// fpStackExact reports whether phys, as walked from the frame record
// fp (the walking function's own), holds the return PCs the slow unwinder
// reads, from the same stack slots. recs is scratch of len(phys) words.
// fp must be the caller's getfp(), passed straight to this function.
func fpStackExact(fp, lo, hi uintptr, phys, recs []uintptr) bool {
	if !fpExactByDelta || !fpWalkRecords(fp, lo, hi, phys, recs) {
		return false
	}
	// The stack may move from here on; the distances between records do
	// not change when it does.
	for i := 0; i+1 < len(phys); i++ {
		d, ok := fpFrameDelta(phys[i])
		if !ok || recs[i+1]-recs[i] != d {
			return false
		}
	}
	return true
}
