// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// GODEBUG=fpunwindcheck=1: cross-check frame-pointer unwinding.
//
// With the setting on, every frame-pointer unwind done for a profile or
// trace record is repeated with the slow unwinder (gentraceback, called as
// the slow path calls it), and the two are compared in the form the record
// keeps: same skip, same depth limit, inline frames treated as the record's
// reader treats them. The sites are heap (mProf_MallocFP), goroutine
// (savegFP), block and mutex (saveblockevent) and trace (traceStack). Which
// path a record takes does not change; a walk the profiler rejects as
// untrustworthy counts as a mismatch, since the record then had to be
// saved by the slow path.
//
// Output goes to stderr, each line starting with "fpunwindcheck: ": the
// first 20 mismatches as they happen, and at exit (after the exit hooks,
// so both main returning and os.Exit) one line per site that ran and a total.
// At level 1 the exit report is printed only if some unwind mismatched: a
// fork-built compiler or linker run with the setting in the environment
// stays silent, and the go command, which caches a tool's output and
// replays it on later builds, has nothing to replay. Level 2 prints the
// report always; misc/fpcheck's "fpcheck run" sets it and reads the lines.
//
// When the setting is off, each site costs one load and branch.

package runtime

import (
	"internal/abi"
	"internal/runtime/atomic"
	"internal/trace/tracev2"
)

// Sites, in report order.
const (
	fpunwindcheckHeap = iota
	fpunwindcheckGoroutine
	fpunwindcheckBlock
	fpunwindcheckMutex
	fpunwindcheckTrace
	fpunwindcheckNumSites
)

var fpunwindcheckSiteNames = [fpunwindcheckNumSites]string{"heap", "goroutine", "block", "mutex", "trace"}

const fpunwindcheckMaxPrinted = 20

var fpunwindcheckStats struct {
	checked    [fpunwindcheckNumSites]atomic.Uint64
	mismatches [fpunwindcheckNumSites]atomic.Uint64
	printed    atomic.Int32
	// inject, when set (by tests), makes the next comparison see the
	// first frame-pointer PC altered, to show that mismatches are found.
	inject atomic.Int32
}

// fpunwindcheckRecord compares one frame-pointer result with the slow unwinder's.
func fpunwindcheckRecord(site int, gp *g, fp, slow []uintptr) {
	fpunwindcheckStats.checked[site].Add(1)
	var flip uintptr
	if fpunwindcheckStats.inject.Load() != 0 && fpunwindcheckStats.inject.CompareAndSwap(1, 0) && len(fp) > 0 {
		flip = 1
	}
	same := len(fp) == len(slow)
	for i := 0; same && i < len(fp); i++ {
		pc := fp[i]
		if i == 0 {
			pc ^= flip
		}
		same = pc == slow[i]
	}
	if same {
		return
	}
	fpunwindcheckStats.mismatches[site].Add(1)
	if fpunwindcheckStats.printed.Add(1) > fpunwindcheckMaxPrinted {
		return
	}
	var goid uint64
	if gp != nil {
		goid = gp.goid
	}
	printlock()
	print("fpunwindcheck: mismatch site=", fpunwindcheckSiteNames[site], " goid=", goid, " fp=[")
	fpunwindcheckPrintPCs(fp, flip)
	print("] slow=[")
	fpunwindcheckPrintPCs(slow, 0)
	print("]\n")
	printunlock()
}

// fpunwindcheckPrintPCs prints pcs separated by commas, the first one
// xored with flip.
func fpunwindcheckPrintPCs(pcs []uintptr, flip uintptr) {
	for i, pc := range pcs {
		if i > 0 {
			print(",")
		}
		print(hex(pc ^ flip))
		flip = 0
	}
}

// fpunwindcheckReport prints the per-site and total counts at exit, after
// the exit hooks (runExitHooks), whether the program succeeded or not.
func fpunwindcheckReport() {
	var checked, mismatches [fpunwindcheckNumSites]uint64
	var total, bad uint64
	for site := range fpunwindcheckNumSites {
		checked[site] = fpunwindcheckStats.checked[site].Load()
		mismatches[site] = fpunwindcheckStats.mismatches[site].Load()
		total += checked[site]
		bad += mismatches[site]
	}
	if bad == 0 && debug.fpunwindcheck < 2 {
		// Nothing to report at level 1: a clean run stays silent, so
		// that tools built by the fork (the compiler, run by the go
		// command, which caches their output) print nothing extra.
		return
	}
	printlock()
	for site := range fpunwindcheckNumSites {
		if checked[site] == 0 {
			continue
		}
		print("fpunwindcheck: site=", fpunwindcheckSiteNames[site], " checked=", checked[site], " mismatches=", mismatches[site], "\n")
	}
	print("fpunwindcheck: checked=", total, " mismatches=", bad, "\n")
	printunlock()
}

// fpunwindcheckBlockEvent checks a block or mutex profile stack that
// saveblockevent recorded by frame pointers. skip is the value it passed
// to fpTracebackPartialExpand (one less than its own skip on the current
// stack, which callers guarantee is positive).
//
//go:noinline
func fpunwindcheckBlockEvent(which bucketType, skip int, gp *g, stk []uintptr) {
	sc := gp.m.fpScratch
	if sc == nil {
		return
	}
	var ns int
	if gp.m.curg == nil || gp.m.curg == gp {
		// saveblockevent's skip, plus this frame.
		ns = callers(skip+2, sc.slow)
	} else {
		ns = gcallers(gp.m.curg, skip, sc.slow)
	}
	// Both forms are read through CallersFrames (expandFrames) into
	// debug.profstackdepth frames.
	limit := int(debug.profstackdepth)
	nfp := fpunwindcheckFrames(stk, sc.logic[:limit])
	nsl := fpunwindcheckFrames(sc.slow[:ns], sc.aux[:limit])
	site := fpunwindcheckBlock
	if which == mutexProfile {
		site = fpunwindcheckMutex
	}
	fpunwindcheckRecord(site, gp, sc.logic[:nfp], sc.aux[:nsl])
}

// fpunwindcheckTraceStack checks a trace stack that traceStack recorded by frame
// pointers (pcBuf[0] is the skip, then physical PCs, already trimmed like
// the slow path's).
//
//go:noinline
func fpunwindcheckTraceStack(skip int, gp *g, pcBuf []uintptr) {
	sc := getg().m.fpScratch
	if sc == nil || gp == nil {
		return
	}
	var ns int
	if getg() == gp {
		// traceStack's callers(skip+1, pcBuf[1:]), plus this frame.
		ns = callers(skip+2, sc.slow[:len(sc.slow)-1])
	} else {
		ns = gcallers(gp, skip, sc.slow[:len(sc.slow)-1])
	}
	// Trim as traceStack does.
	if ns > 0 {
		ns--
	}
	if ns > 0 && gp.goid == 1 {
		ns--
	}
	limit := min(tracev2.MaxFramesPerStack, len(sc.logic))
	nfp := fpunwindExpand(sc.logic[:limit], pcBuf)
	fpunwindcheckRecord(fpunwindcheckTrace, gp, sc.logic[:nfp], sc.slow[:min(ns, limit)])
}

// fpunwindcheckFrames stores into dst the return PCs of the frames
// CallersFrames(src) yields, without allocating.
func fpunwindcheckFrames(src, dst []uintptr) int {
	n := 0
	var nextPC uintptr
	calleeID := abi.FuncIDNormal
	for n < len(dst) {
		var pc uintptr
		if nextPC != 0 {
			pc, nextPC = nextPC, 0
		} else if len(src) > 0 {
			pc, src = src[0], src[1:]
		} else {
			break
		}
		fi := findfunc(pc)
		if !fi.valid() {
			continue
		}
		if pc > fi.entry() {
			pc--
		}
		u, uf := newInlineUnwinder(fi, pc)
		sf := u.srcFunc(uf)
		if !u.isInlined(uf) {
			// As expandFrames: elide physical wrapper frames.
			if fi.funcID == abi.FuncIDWrapper && elideWrapperCalling(calleeID) {
				continue
			}
			calleeID = fi.funcID
		} else {
			calleeID = abi.FuncIDNormal
		}
		if u.isInlined(uf) {
			for unext := u.next(uf); unext.valid() && len(src) > 0 && src[0] != unext.pc+1; unext = u.next(unext) {
				snext := u.srcFunc(unext)
				if snext.funcID == abi.FuncIDWrapper && elideWrapperCalling(sf.funcID) {
					continue
				}
				nextPC = unext.pc + 1
				break
			}
		}
		dst[n] = pc + 1
		n++
	}
	return n
}
