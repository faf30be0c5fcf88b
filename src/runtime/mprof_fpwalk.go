// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Frame-pointer stack walks for the heap and goroutine profilers.
//
// The heap profiler (mProf_Malloc) and runtime.GoroutineProfile record
// logical stacks, exactly as tracebackPCs produces them: inlined frames
// expanded, wrappers elided, return PCs. They obtain them in two steps:
//
//  1. fpWalk collects the physical return PCs by following the frame
//     pointer chain. It is a nosplit leaf, so the stack cannot move
//     while it holds frame pointers as integers (issue 74851), and it
//     checks every frame pointer against the bounds of the stack being
//     walked, so a stale or garbage frame pointer (issues 61766, 73664)
//     ends the walk with fpWalkBad instead of a wild read.
//  2. fpLogicalPCs turns physical PCs into logical PCs with the same rules as
//     tracebackPCs (skip, inline expansion, wrapper elision, the PC
//     adjustment after injected calls, and the frames at which the
//     unwinder stops). Its result is a pure function of the PCs, so callers
//     cache it per physical stack.
//
// Callers fall back to gentraceback whenever the walk is not trustworthy.

package runtime

import (
	"internal/abi"
	"internal/goarch"
	"internal/runtime/atomic"
	"unsafe"
)

// fpProfArch reports whether this architecture keeps frame pointers that
// the profilers can follow.
const fpProfArch = goarch.ArchFamily == goarch.AMD64 || goarch.ArchFamily == goarch.ARM64

// Results of fpWalk.
const (
	fpWalkEnd  = iota // reached a zero frame pointer
	fpWalkFull        // pcBuf is full; the chain may continue
	fpWalkLeft        // the next frame pointer is outside [lo, hi)
	fpWalkBad         // a frame pointer is misaligned or does not grow
)

// fpWalk follows the frame pointer chain starting at fp, storing each
// frame's return address into pcBuf, for as long as the frame records lie
// within [lo, hi). It makes no calls, so the stack cannot be copied while
// it runs.
//
//go:nosplit
func fpWalk(fp, lo, hi uintptr, pcBuf []uintptr) (n int, how int) {
	for n < len(pcBuf) {
		if fp == 0 {
			return n, fpWalkEnd
		}
		if fp < lo || fp > hi-2*goarch.PtrSize {
			return n, fpWalkLeft
		}
		if fp&(goarch.PtrSize-1) != 0 {
			return n, fpWalkBad
		}
		pcBuf[n] = *(*uintptr)(unsafe.Pointer(fp + goarch.PtrSize))
		next := fpNextRecord(fp, pcBuf[n])
		n++
		if next != 0 && next >= lo && next < hi && next <= fp {
			return n, fpWalkBad
		}
		fp = next
	}
	return n, fpWalkFull
}

// fpLogicalPCs converts the physical return PCs in phys (innermost first) to
// the logical PCs tracebackPCs would record for the same frames, skipping
// skip logical frames and storing at most len(dst). It returns the number
// stored and whether the slow unwinder would have stopped within phys (at a
// top-of-stack or SP-writing function, or at a PC with no function), which
// callers use to check that a chain ending early is not truncated.
//
// syscallFirst is set when phys[0] is gp.syscallpc, for which the unwinder
// ignores the SP-writing flag of the innermost frame.
func fpLogicalPCs(skip int, phys, dst []uintptr, syscallFirst bool) (n int, stopped bool) {
	calleeID := abi.FuncIDNormal
	trap := false
	for i, pc := range phys {
		if n >= len(dst) {
			return n, false
		}
		if !trap && fpPlainPC(pc) {
			// One logical frame, pc itself; nothing else applies.
			if skip > 0 {
				skip--
			} else {
				dst[n] = pc
				n++
			}
			calleeID = abi.FuncIDNormal
			continue
		}
		f := findfunc(pc)
		if !f.valid() || f.pcsp == 0 {
			// The unwinder ends the traceback without this frame.
			return n, true
		}
		symPC := pc
		if !trap && pc > f.entry() {
			symPC = pc - 1
		}
		frames := 0
		for iu, uf := newInlineUnwinder(f, symPC); n < len(dst) && uf.valid(); uf = iu.next(uf) {
			frames++
			sf := iu.srcFunc(uf)
			if sf.funcID == abi.FuncIDWrapper && elideWrapperCalling(calleeID) {
				// ignore wrappers
			} else if skip > 0 {
				skip--
			} else {
				dst[n] = uf.pc + 1
				n++
			}
			calleeID = sf.funcID
		}
		flag := f.flag
		if f.funcID == abi.FuncID_cgocallback || (i == 0 && syscallFirst) {
			flag &^= abi.FuncFlagSPWrite
		}
		if flag&(abi.FuncFlagTopFrame|abi.FuncFlagSPWrite) != 0 {
			return n, true
		}
		if !trap && frames == 1 && n < len(dst) && pc > f.entry() && f.funcID == abi.FuncIDNormal && f.flag == 0 {
			// Not inlined into, so the one frame was pc itself (the
			// unwinder's pc-1, plus 1), and with a normal funcID it is no
			// wrapper, elides none and is no injected call.
			fpPlainPCs[fpPCSlot(pc)].StoreRelease(pc) // readers need no more ordering than this
		}
		trap = isInjectedCall(f.funcID)
		calleeID = f.funcID
	}
	return n, false
}

// fpPlainPCs caches the return PCs that fpLogicalPCs found plain: a
// normal function (funcID, no flags) with no inlined call at the PC, whose
// one logical frame, reached by a return, is the PC itself. A slot holds
// the PC, or another PC, or 0. Whether a PC is plain depends only on the
// PC, so the cache cannot go stale.
var fpPlainPCs [1 << 12]atomic.Uintptr

// fpPCSlot returns pc's slot in the per-PC caches of 1<<12 entries.
func fpPCSlot(pc uintptr) uintptr {
	return (pc ^ pc>>12) & (1<<12 - 1)
}

// fpPlainPC reports whether pc is cached as plain.
func fpPlainPC(pc uintptr) bool {
	return fpPlainPCs[fpPCSlot(pc)].Load() == pc
}

// fpStackHash hashes a PC slice and one extra word. It runs on every
// sampled allocation and for every goroutine a profile walks, after the
// walk, and the lookup that follows waits for it, so its latency is the
// profiler's. It is the runtime's memory hash, which hashes PC arrays for
// the tracer too (tracemap.go): AES rounds on CPUs that have them, with
// extra as the seed. Lookups compare whole stacks, so the hash only
// spreads them (TestFPStackHash, TestFPStackHashSpread).
func fpStackHash(stk []uintptr, extra uintptr) uintptr {
	if len(stk) == 0 {
		return memhash64(noescape(unsafe.Pointer(&extra)), 0)
	}
	return memhash(unsafe.Pointer(unsafe.SliceData(stk)), extra, uintptr(len(stk))*goarch.PtrSize)
}
