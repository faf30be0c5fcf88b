package stack

// Unwinding by the binary's SFrame table.
//
// When the executable carries an .sframe table (the fork's linker writes
// one), the walk steps frame by frame with the table's rules for as long as
// it has one: the CFA, return address and frame pointer are exact at every
// instruction, so a frameless leaf, a prologue or an epilogue keeps its
// caller in every frame, not only the innermost one (a frameless function
// interrupted by an injected asyncPreempt call is the common outer case).
// The rules come from misc/internal/sframe (RuleAt, Step); this file only
// decides where the table stops and the frame-pointer walk takes over:
//
//   - at a PC the table does not cover (C code, the vDSO, a binary without
//     a table, a corrupt table);
//   - at a frame the table marks outermost or as a signal frame: roots and
//     signal trampolines keep the handling the frame-pointer walk gives
//     them (named roots, the kernel's signal frame), so the table can only
//     add frames, never end a walk earlier than frame pointers would;
//   - at a step that makes no sense (a CFA from the stack pointer that does
//     not climb, an unreadable word, an untracked return address in an
//     outer frame).
//
// When the table stops at the innermost frame, the walk goes on exactly as
// without a table (the pclntab SP-delta repair, then frame pointers); when
// it stops at an outer frame, the frame-pointer walk continues from the
// frame pointer the table restored for that frame, which points at the
// frame's record since the frame is stopped at a call.

import (
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/sframe"
	"fpsafe.dev/misc/internal/target"
)

// tableKey is the key of a binary's decoded table (gobin.Binary.Attach).
type tableKey struct{}

// Table returns bin's decoded SFrame table, or nil when the binary has none
// or it does not decode (the walk then uses frame pointers alone). It is
// decoded once per binary.
func Table(bin *gobin.Binary) *sframe.Section {
	return bin.Attach(tableKey{}, func() any {
		var sec *sframe.Section
		if sd, err := bin.SFrame(); err == nil {
			if s, err := sframe.Decode(sd.Data, sd.Addr); err == nil {
				sec = s
			}
		}
		return sec
	}).(*sframe.Section)
}

// WithoutTable makes walks of bin's stacks use frame pointers alone, as
// for a binary without a table, unless Table already decoded it. A reader
// that walks only parked goroutines, from the registers the scheduler
// saved (where the frame pointers are exact), and keeps many binaries open
// (the node agent) spares the decoded tables, which take a heap of tens of
// megabytes for a large binary.
func WithoutTable(bin *gobin.Binary) {
	bin.Attach(tableKey{}, func() any { return (*sframe.Section)(nil) })
}

// How a run of SFrame steps ended.
type sframeEnd int

const (
	sframeFallBack sframeEnd = iota // go on by frame pointers from the returned registers
	sframeDone                      // the walk is over (a root, a zero return address, an error)
	sframeSignal                    // go on from the interrupted registers returned
)

// sframeSteps unwinds from regs, whose PC (exact, already in w.PCs) the
// table may cover, appending callers while the table has rules. It returns
// how it ended and the registers to go on from: for sframeFallBack, those of
// the last frame appended (regs themselves if no step was taken).
func (w *Walk) sframeSteps(mem target.Mem, bin *gobin.Binary, tab *sframe.Section, bias uint64, regs target.Regs) (target.Regs, sframeEnd) {
	var none target.Regs
	read := func(addr uint64) (uint64, error) { return target.Word(mem, addr) }
	cur := sframe.Regs{PC: regs.PC, SP: regs.SP, FP: regs.FP, LR: regs.LR}
	asRegs := func(r sframe.Regs) target.Regs { return target.Regs{PC: r.PC, SP: r.SP, FP: r.FP, LR: r.LR} }
	for inner := true; len(w.PCs) < MaxDepth; inner = false {
		lookup := cur.PC - bias
		if !inner {
			lookup-- // a return address: the rule of the call
		}
		rule, err := ruleAt(bin, tab, lookup)
		if err != nil || rule.Outermost || rule.Signal || rule.MangledRA ||
			!inner && rule.RA.Where == sframe.Untracked && bin.Arch == "arm64" {
			return asRegs(cur), sframeFallBack
		}
		caller, err := tab.StepRule(cur, rule, read)
		if err != nil {
			return asRegs(cur), sframeFallBack
		}
		// A CFA from the stack pointer is above it, except in an arm64
		// leaf that has not allocated a frame; one from the frame pointer
		// may be on another stack (Go's stack switches).
		viaFP := rule.CFA.Reg == tab.FPReg()
		if !viaFP && (caller.SP < cur.SP || caller.SP == cur.SP && !(inner && bin.Arch == "arm64")) {
			return asRegs(cur), sframeFallBack
		}
		if caller.PC == 0 {
			return none, sframeDone
		}
		w.PCs = append(w.PCs, caller.PC)
		f := factsOf(bin, caller.PC-1-bias)
		if f.root {
			return none, sframeDone
		}
		// caller.SP is the CFA: the caller's SP once the call returns.
		if f.signal || f.sigreturn {
			if next, ok := signalFrame(mem, bin, bias, caller.PC, caller.SP); ok {
				return next, sframeSignal
			}
		}
		cur = caller
	}
	w.Stop = "depth limit"
	return none, sframeDone
}
