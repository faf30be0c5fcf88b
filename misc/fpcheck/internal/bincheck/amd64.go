package bincheck

import (
	"golang.org/x/arch/x86/x86asm"
)

const amd64BP = 5

// gpr64 returns the 0-15 number of a general register (any width), regSP for
// RSP/ESP/SP, and -1 for anything else.
func gpr64(a x86asm.Arg) int {
	r, ok := a.(x86asm.Reg)
	if !ok {
		return -1
	}
	var n int
	switch {
	case r >= x86asm.RAX && r <= x86asm.R15:
		n = int(r - x86asm.RAX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		n = int(r - x86asm.EAX)
	case r >= x86asm.AX && r <= x86asm.R15W:
		n = int(r - x86asm.AX)
	default:
		return -1
	}
	if n == 4 {
		return regSP
	}
	return n
}

// noWrite lists instructions whose first operand is not a destination.
var amd64NoWrite = map[x86asm.Op]bool{
	x86asm.CMP: true, x86asm.TEST: true, x86asm.PUSH: true, x86asm.BT: true,
	x86asm.CALL: true, x86asm.JMP: true, x86asm.NOP: true, x86asm.PREFETCHT0: true,
}

func decodeAMD64(code []byte, pc uint64) (insn, error) {
	inst, err := x86asm.Decode(code, 64)
	if err != nil {
		return insn{}, err
	}
	in := insn{pc: pc, size: inst.Len, def: -1, defSrc: -1, fpSrc: -1, spSrc: -1}
	in.text = x86asm.GoSyntax(inst, pc, nil)
	next := pc + uint64(inst.Len)
	a0, a1 := inst.Args[0], inst.Args[1]
	switch inst.Op {
	case x86asm.CALL:
		in.flow = flowCall
		if rel, ok := a0.(x86asm.Rel); ok {
			in.target = uint64(int64(next) + int64(rel))
		}
		return in, nil
	case x86asm.JMP:
		if rel, ok := a0.(x86asm.Rel); ok {
			in.flow, in.target = flowJump, uint64(int64(next)+int64(rel))
		} else {
			in.flow = flowIndirect
		}
		return in, nil
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE,
		x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO,
		x86asm.JP, x86asm.JS, x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ,
		x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		if rel, ok := a0.(x86asm.Rel); ok {
			in.flow, in.target = flowCondJump, uint64(int64(next)+int64(rel))
		}
		return in, nil
	case x86asm.RET, x86asm.IRET, x86asm.IRETQ:
		in.flow = flowRet
		return in, nil
	case x86asm.UD1, x86asm.UD2, x86asm.INT, x86asm.HLT:
		in.flow = flowTrap
		return in, nil
	case x86asm.PUSH:
		if gpr64(a0) == amd64BP {
			in.fpSt = true
		}
		return in, nil
	case x86asm.POP:
		switch gpr64(a0) {
		case amd64BP:
			in.fp = fpRestore
		case regSP:
			in.sp = spSwitch
		default:
			in.def = gpr64(a0)
		}
		return in, nil
	}
	// Stores of BP.
	if _, ok := a0.(x86asm.Mem); ok && gpr64(a1) == amd64BP && (inst.Op == x86asm.MOV || inst.Op == x86asm.XCHG) {
		in.fpSt = true
	}
	if amd64NoWrite[inst.Op] {
		return in, nil
	}
	dst := gpr64(a0)
	if dst < 0 {
		return in, nil
	}
	// Classify the source of the written value.
	srcReg := gpr64(a1)
	imm, isImm := a1.(x86asm.Imm)
	mem, isMem := a1.(x86asm.Mem)
	memBase := -1
	if isMem {
		memBase = gpr64(mem.Base)
	}
	var (
		copyFrom = -1    // value is a copy (or copy plus constant) of this register
		zero     = false // value is zero
		load     = false // value is loaded from memory at memBase
	)
	switch inst.Op {
	case x86asm.MOV:
		switch {
		case isImm && imm == 0:
			zero = true
		case srcReg >= 0:
			copyFrom = srcReg
		case isMem:
			load = true
		}
	case x86asm.XOR, x86asm.SUB:
		if srcReg == dst {
			zero = true
		} else if isImm {
			copyFrom = dst
		}
	case x86asm.AND:
		if isImm && imm == 0 {
			zero = true
		} else if isImm {
			copyFrom = dst
		}
	case x86asm.ADD, x86asm.OR:
		if isImm {
			copyFrom = dst
		}
	case x86asm.LEA:
		if isMem && mem.Index == 0 {
			copyFrom = memBase
		}
	}
	if inst.Op == x86asm.XCHG {
		// Both operands change; treat as unknown.
		copyFrom, zero, load = -1, false, false
	}
	switch dst {
	case amd64BP:
		// BP plus a constant keeps the same chain (writeFP).
		if !in.writeFP(zero, copyFrom, amd64BP) {
			switch {
			case load && (memBase == regSP || memBase == amd64BP):
				in.fp = fpRestore
			case load:
				in.fp = fpLoad
			default:
				in.fp = fpOther
			}
		}
	case regSP:
		in.writeSP(copyFrom)
	default:
		in.def, in.defSrc = dst, copyFrom
		in.defOffset = (inst.Op == x86asm.ADD || inst.Op == x86asm.SUB) && srcReg >= 0 && srcReg != dst
	}
	return in, nil
}
