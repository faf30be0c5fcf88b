package bincheck

import (
	"encoding/binary"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
)

const arm64FP = 29

// xreg returns the number of a general register operand (X or W form), regSP
// for SP, and -1 otherwise (including the zero register).
func xreg(a arm64asm.Arg) int {
	switch r := a.(type) {
	case arm64asm.Reg:
		switch {
		case r >= arm64asm.X0 && r <= arm64asm.X30:
			return int(r - arm64asm.X0)
		case r >= arm64asm.W0 && r <= arm64asm.W30:
			return int(r - arm64asm.W0)
		}
	case arm64asm.RegSP:
		switch {
		case arm64asm.Reg(r) == arm64asm.SP || arm64asm.Reg(r) == arm64asm.WSP:
			return regSP
		case arm64asm.Reg(r) >= arm64asm.X0 && arm64asm.Reg(r) <= arm64asm.X30:
			return int(arm64asm.Reg(r) - arm64asm.X0)
		}
	}
	return -1
}

func isZeroReg(a arm64asm.Arg) bool {
	r, ok := a.(arm64asm.Reg)
	return ok && (r == arm64asm.XZR || r == arm64asm.WZR)
}

func isZeroImm(a arm64asm.Arg) bool {
	switch v := a.(type) {
	case arm64asm.Imm:
		return v.Imm == 0
	case arm64asm.Imm64:
		return v.Imm == 0
	case arm64asm.ImmShift:
		return v.String() == "#0x0"
	}
	return false
}

func isImm(a arm64asm.Arg) bool {
	switch a.(type) {
	case arm64asm.Imm, arm64asm.Imm64, arm64asm.ImmShift:
		return true
	}
	return false
}

// memBase returns the base register of a memory operand and whether it is
// written back (pre/post-index).
func memBase(a arm64asm.Arg) (base int, wb bool, ok bool) {
	switch m := a.(type) {
	case arm64asm.MemImmediate:
		return xreg(m.Base), m.Mode == arm64asm.AddrPreIndex || m.Mode == arm64asm.AddrPostIndex, true
	case arm64asm.MemExtend:
		return xreg(m.Base), false, true
	}
	return -1, false, false
}

func decodeARM64(code []byte, pc uint64) (insn, error) {
	in := insn{pc: pc, size: 4, def: -1, defSrc: -1, fpSrc: -1, spSrc: -1}
	if len(code) < 4 {
		return in, errShort
	}
	inst, err := arm64asm.Decode(code[:4])
	if err != nil {
		// Data words in text (literal pools) and undecodable words.
		in.text = "WORD " + hex32(binary.LittleEndian.Uint32(code))
		in.flow = flowTrap
		return in, nil
	}
	in.text = arm64asm.GoSyntax(inst, pc, nil, nil)
	op := inst.Op.String()
	args := inst.Args
	var last arm64asm.Arg
	for _, a := range args {
		if a == nil {
			break
		}
		last = a
	}
	pcrel := func() uint64 {
		if r, ok := last.(arm64asm.PCRel); ok {
			return uint64(int64(pc) + int64(r))
		}
		return 0
	}
	switch op {
	case "BL":
		in.flow, in.target = flowCall, pcrel()
		return in, nil
	case "BLR", "BLRAA", "BLRAB", "BLRAAZ", "BLRABZ":
		in.flow = flowCall
		return in, nil
	case "B":
		if _, cond := args[0].(arm64asm.Cond); cond {
			in.flow = flowCondJump
		} else {
			in.flow = flowJump
		}
		in.target = pcrel()
		return in, nil
	case "CBZ", "CBNZ", "TBZ", "TBNZ":
		in.flow, in.target = flowCondJump, pcrel()
		return in, nil
	case "BR", "BRAA", "BRAB", "BRAAZ", "BRABZ":
		in.flow = flowIndirect
		return in, nil
	case "RET", "RETAA", "RETAB", "ERET":
		in.flow = flowRet
		return in, nil
	case "BRK", "UDF", "HLT":
		in.flow = flowTrap
		return in, nil
	}
	// Memory operands: loads, stores and base write-back.
	var mem arm64asm.Arg
	for _, a := range args {
		if a == nil {
			break
		}
		if _, _, ok := memBase(a); ok {
			mem = a
		}
	}
	if mem != nil {
		base, wb, _ := memBase(mem)
		if wb && base == regSP {
			in.sp = spAdjust
		}
		switch {
		case strings.HasPrefix(op, "ST"):
			// STR Rt, [..]; STP Rt1, Rt2, [..]; STXR Ws, Rt, [..] (Ws is a status result).
			for _, a := range args {
				if a == nil || a == mem {
					break
				}
				if xreg(a) == arm64FP {
					in.fpSt = true
				}
			}
		case strings.HasPrefix(op, "LD"):
			for i, a := range args {
				if a == nil || a == mem {
					break
				}
				if i > 0 && !strings.HasPrefix(op, "LDP") && !strings.HasPrefix(op, "LDNP") && !strings.HasSuffix(op, "XP") {
					break
				}
				r := xreg(a)
				switch {
				case r == arm64FP && (base == regSP || base == arm64FP):
					in.fp = fpRestore
				case r == arm64FP:
					in.fp = fpLoad
				case r >= 0 && r != regSP:
					in.def = r
				}
			}
		}
		return in, nil
	}
	switch op {
	case "CMP", "CMN", "TST", "CCMP", "CCMN", "NOP", "MSR", "SVC", "DMB", "DSB", "ISB",
		"HINT", "YIELD", "PRFM", "FCMP", "FCMPE", "SYS", "CLREX":
		return in, nil
	}
	if args[0] == nil {
		return in, nil
	}
	dst := xreg(args[0])
	if dst < 0 {
		return in, nil
	}
	var (
		copyFrom = -1
		zero     bool
	)
	a1, a2 := args[1], args[2]
	switch op {
	case "MOV":
		switch {
		case isZeroReg(a1) || isZeroImm(a1):
			zero = true
		case xreg(a1) >= 0:
			copyFrom = xreg(a1)
		}
	case "MOVZ":
		zero = isZeroImm(a1)
	case "ORR", "EOR", "AND":
		if isZeroReg(a1) && (isZeroReg(a2) || (op != "ORR" && op != "EOR")) {
			zero = true
		} else if (op == "EOR" || op == "SUB") && xreg(a1) >= 0 && xreg(a1) == xreg(a2) {
			zero = true
		}
	case "ADD", "SUB":
		if a2 != nil && isImm(a2) && xreg(a1) >= 0 {
			copyFrom = xreg(a1)
		} else if op == "SUB" && xreg(a1) >= 0 && xreg(a1) == xreg(a2) {
			zero = true
		}
	}
	switch dst {
	case arm64FP:
		if !in.writeFP(zero, copyFrom, arm64FP) {
			in.fp = fpOther
		}
	case regSP:
		in.writeSP(copyFrom)
	default:
		in.def, in.defSrc = dst, copyFrom
	}
	return in, nil
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	b := []byte("0x00000000")
	for i := 9; i >= 2; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}
