package bincheck

import "fpsafe.dev/misc/fpcheck/internal/fprule"

// An insn is one decoded instruction, reduced to what the frame-pointer
// analysis needs. Decoders for each architecture fill it in.
type insn struct {
	pc   uint64
	size int
	text string

	flow   flow
	target uint64 // direct branch or call target

	fp    fpEffect // effect on the frame-pointer register
	fpSrc int      // for fpFromReg: source register
	fpSt  bool     // stores the frame pointer to memory (saves it)

	sp    spEffect // effect on the stack pointer
	spSrc int      // for spFromReg: source register

	// def is the general register this instruction writes (-1 for none), and
	// defSrc the register it is computed from by a move or arithmetic with an
	// immediate (-1 if it is loaded or computed otherwise; regSP for SP).
	def, defSrc int
	// defOffset says def is changed by adding or subtracting another
	// register: a pointer moved within the memory it points into.
	defOffset bool
}

// writeFP records a write of the frame-pointer register fp, whose source
// is copyFrom (a register copy or a register plus a constant; -1 for
// anything else) or zero. It reports false, leaving the effect for the
// caller to classify, when the write is none of those.
func (in *insn) writeFP(zero bool, copyFrom, fp int) bool {
	switch {
	case zero:
		in.fp = fpClear
	case copyFrom == regSP:
		in.fp = fpFromSP
	case copyFrom == fp:
		// The frame pointer plus a constant: still the same chain.
	case copyFrom >= 0:
		in.fp, in.fpSrc = fpFromReg, copyFrom
	default:
		return false
	}
	return true
}

// writeSP records a write of SP whose source is copyFrom, as for writeFP:
// an adjustment, a move from another register, or a switch to a stack
// loaded from memory.
func (in *insn) writeSP(copyFrom int) {
	switch {
	case copyFrom == regSP:
		in.sp = spAdjust
	case copyFrom >= 0:
		in.sp, in.spSrc = spFromReg, copyFrom
	default:
		in.sp = spSwitch
	}
}

type flow uint8

const (
	flowNext     flow = iota
	flowCall          // direct or indirect call; returns to the next instruction
	flowJump          // unconditional direct jump
	flowCondJump      // conditional direct jump
	flowIndirect      // indirect jump: leaves the function
	flowRet
	flowTrap // does not continue (UD2, INT3, BRK)
)

// The frame-pointer and stack-pointer effects are the model's
// (package fprule); the decoders name them with these short forms.
type (
	fpEffect = fprule.FPEffect
	spEffect = fprule.SPEffect
)

const (
	fpNone    = fprule.FPNone
	fpClear   = fprule.FPClear
	fpFromSP  = fprule.FPFromSP
	fpFromReg = fprule.FPFromReg
	fpRestore = fprule.FPRestore
	fpLoad    = fprule.FPLoad
	fpOther   = fprule.FPOther

	spNone    = fprule.SPNone
	spAdjust  = fprule.SPAdjust
	spFromReg = fprule.SPFromReg
	spSwitch  = fprule.SPSwitch
)

const regSP = 100 // pseudo register number for the stack pointer

// reg converts a decoder's register number to the model's.
func reg(r int) fprule.Reg {
	switch {
	case r == regSP:
		return fprule.SP
	case r < 0 || r >= 31:
		return fprule.NoReg
	}
	return fprule.Reg(r)
}

// effect is in's effect in the model.
func (in *insn) effect() fprule.Effect {
	return fprule.Effect{
		FP: in.fp, FPSrc: reg(in.fpSrc), FPSave: in.fpSt,
		SP: in.sp, SPSrc: reg(in.spSrc),
		Def: reg(in.def), DefSrc: reg(in.defSrc), DefOffset: in.defOffset,
	}
}
