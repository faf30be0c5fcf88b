package fpchain

import (
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// Where a function's own frame record lives.
//
// A Go function with a frame saves its caller's frame pointer and points
// the frame-pointer register at the saved copy: on amd64 with PUSHQ BP;
// MOVQ SP, BP at entry, so the record is just below the return address; on
// arm64 the record {saved R29, saved LR} sits at the bottom of the frame,
// R29 = RSP-8. Until the register is set (a frameless function, the
// prologue) and again after the epilogue restores it, the register still
// holds the caller's frame pointer, and a walk from it skips the caller.

// A Frame is what is known about the innermost frame of a stack.
type Frame struct {
	Arch string // "amd64" or "arm64"
	PC   uint64

	// With registers (a stopped thread): SPDelta is the pclntab's SP delta
	// at PC (-1 if unknown), SP and FP the stack and frame-pointer
	// registers.
	HaveRegs bool
	SPDelta  int32
	SP, FP   uint64

	// Without registers (a recorded call chain): the function's machine
	// code from its entry, through at least the instruction at PC.
	Entry uint64
	Code  []byte
}

// InFrameRecord reports whether the frame-pointer register at f.PC points
// at the frame record of the function running there. With registers it
// checks that the register holds the record's address, which the SP delta
// locates; without, it decides from the code: past the instruction that
// sets the register, not in the stack-growth block the prologue branches
// to (laid out last, it runs before the frame exists), and not at a
// return after the epilogue.
func InFrameRecord(f Frame) bool {
	if f.HaveRegs {
		return f.SPDelta > 0 && f.FP == RecordAddr(f.Arch, f.SPDelta, f.SP)
	}
	setup, split := prologue(f.Arch, f.Code)
	if setup == 0 || f.PC < f.Entry+setup || f.PC-f.Entry >= uint64(len(f.Code)) {
		return false
	}
	if split > setup && f.PC >= f.Entry+split {
		return false
	}
	return !isRet(f.Arch, f.Code[f.PC-f.Entry:])
}

// RecordAddr is the address of the frame record of a function whose SP
// delta at the current PC is spd (> 0), given the stack pointer sp.
func RecordAddr(arch string, spd int32, sp uint64) uint64 {
	if arch == "arm64" {
		return sp - 8
	}
	return sp + uint64(spd) - 8
}

// prologue returns the offset just after the instruction that points the
// frame-pointer register at the new record, searched in the first dozen
// instructions (0 if there is none), and the offset of the stack-growth
// block: the nearest forward target of a conditional branch before that
// instruction, which the stack-bound check takes to call morestack (0 if
// there is none).
func prologue(arch string, code []byte) (setup, split uint64) {
	for off, n := 0, 0; off < len(code) && n < 12; n++ {
		var size int
		var isSetup bool
		target := int64(-1)
		if arch == "arm64" {
			inst, err := arm64asm.Decode(code[off:])
			size = 4
			if err == nil {
				s := inst.String()
				// SUB $8, RSP, R29 (or ADD / MOV from SP into R29).
				isSetup = (inst.Op == arm64asm.SUB || inst.Op == arm64asm.ADD || inst.Op == arm64asm.MOV) && strings.HasPrefix(s, inst.Op.String()+" X29, SP")
				if _, cond := inst.Args[0].(arm64asm.Cond); cond && inst.Op == arm64asm.B {
					if rel, ok := inst.Args[1].(arm64asm.PCRel); ok {
						target = int64(off) + int64(rel)
					}
				}
			}
		} else {
			inst, err := x86asm.Decode(code[off:], 64)
			if err != nil {
				return 0, 0
			}
			size = inst.Len
			isSetup = inst.Op == x86asm.MOV && inst.Args[0] == x86asm.RBP && inst.Args[1] == x86asm.RSP ||
				inst.Op == x86asm.LEA && inst.Args[0] == x86asm.RBP
			if rel, ok := inst.Args[0].(x86asm.Rel); ok && inst.Op >= x86asm.JA && inst.Op <= x86asm.JS && inst.Op != x86asm.JMP {
				target = int64(off+size) + int64(rel)
			}
		}
		if target > int64(off) && (split == 0 || uint64(target) < split) {
			split = uint64(target)
		}
		off += size
		if isSetup {
			return uint64(off), split
		}
	}
	return 0, 0
}

// isRet reports whether the code at at returns. On amd64 no-ops before
// the RET count as the return: the compiler may pad between POPQ BP and
// RET, where the record is already gone.
func isRet(arch string, at []byte) bool {
	if arch == "arm64" {
		inst, err := arm64asm.Decode(at)
		return err == nil && inst.Op == arm64asm.RET
	}
	for n := 0; n < 8; n++ {
		inst, err := x86asm.Decode(at, 64)
		if err != nil {
			return false
		}
		switch inst.Op {
		case x86asm.RET:
			return true
		case x86asm.NOP:
			at = at[inst.Len:]
			continue
		}
		return false
	}
	return false
}
