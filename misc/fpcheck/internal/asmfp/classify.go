package asmfp

import (
	"regexp"
	"strconv"
	"strings"

	"fpsafe.dev/misc/fpcheck/internal/fprule"
)

// archRegs names the registers that matter, per architecture.
type archRegs struct {
	fp, sp string
	fpRE   *regexp.Regexp
}

var archs = map[string]*archRegs{
	"amd64": {fp: "BP", sp: "SP", fpRE: regexp.MustCompile(`\bBP\b`)},
	"arm64": {fp: "R29", sp: "RSP", fpRE: regexp.MustCompile(`\bR29\b`)},
}

type kind uint8

const (
	kNext kind = iota
	kCall
	kJump     // unconditional jump to a label or n(PC)
	kCondJump // conditional jump to a label or n(PC)
	kTail     // jump to a symbol: a tail call
	kIndirect // jump through a register
	kRet
	kTrap
)

// The frame-pointer and stack-pointer effects are the model's (package
// fprule); the classifier names them with these short forms.
type (
	fpEff = fprule.FPEffect
	spEff = fprule.SPEffect
)

const (
	eNone    = fprule.FPNone
	eClear   = fprule.FPClear
	eFromSP  = fprule.FPFromSP
	eFromReg = fprule.FPFromReg
	eRestore = fprule.FPRestore
	eLoad    = fprule.FPLoad
	eOther   = fprule.FPOther

	sNone    = fprule.SPNone
	sAdjust  = fprule.SPAdjust
	sFromReg = fprule.SPFromReg
	sSwitch  = fprule.SPSwitch
)

// classified is what the checks need to know about one instruction.
type classified struct {
	kind     kind
	target   string // label, n(PC), or symbol
	fp       fpEff
	fpSrc    string
	fpRead   bool // mentions the frame pointer other than as a pure destination
	fpSave   bool // stores the frame pointer to memory
	sp       spEff
	spSrc    string
	noReturn bool   // a call or tail jump to a function that does not return
	savedCtx bool   // loads the frame pointer from a saved context (gobuf.bp, g.syscallbp)
	def      string // register written
	defSrc   string // register it is a copy of (or copy plus constant), "" otherwise
	// defOffset: def is moved by adding or subtracting another register,
	// so it still points into the memory it pointed into.
	defOffset bool
}

var armCond = map[string]bool{
	"BEQ": true, "BNE": true, "BCS": true, "BHS": true, "BCC": true, "BLO": true, "BMI": true,
	"BPL": true, "BVS": true, "BVC": true, "BHI": true, "BLS": true, "BGE": true, "BLT": true,
	"BGT": true, "BLE": true, "CBZ": true, "CBNZ": true, "CBZW": true, "CBNZW": true,
	"TBZ": true, "TBNZ": true,
}

func isMem(a string) bool {
	return strings.HasSuffix(a, ")") && !strings.HasPrefix(a, "(") || strings.HasPrefix(a, "(") && !strings.Contains(a, ",")
}

// memBase returns the base register of a memory operand such as 8(SP) or
// (g_sched+gobuf_bp)(DX)(R1*8).
func memBase(a string) string {
	i := strings.LastIndex(a, "(")
	if i < 0 {
		return ""
	}
	inner := a[i+1 : len(a)-1]
	if strings.Contains(inner, "*") {
		// Index register; the base is the previous group.
		j := strings.LastIndex(a[:i], "(")
		if j < 0 {
			return ""
		}
		inner = a[j+1 : i-1]
	}
	return inner
}

func isImm(a string) bool { return strings.HasPrefix(a, "$") }

func isZeroImm(a string) bool {
	if !isImm(a) {
		return false
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(a, "$"), 0, 64)
	return err == nil && v == 0
}

func isRegName(a string) bool {
	if a == "" || isImm(a) || strings.ContainsAny(a, "()+·$") {
		return false
	}
	return regexp.MustCompile(`^[A-Z][A-Z0-9]*$`).MatchString(a)
}

var noDest = map[string]bool{
	"CMPQ": true, "CMPL": true, "CMPW": true, "CMPB": true, "TESTQ": true, "TESTL": true,
	"TESTW": true, "TESTB": true, "BTQ": true, "BTL": true, "CMP": true, "CMN": true,
	"TST": true, "TSTW": true, "CMNW": true, "NOP": true, "PCALIGN": true, "FUNCDATA": true,
	"PCDATA": true, "PUSHQ": true, "PUSHL": true, "PUSHFQ": true, "PRFM": true,
}

func classify(in *inst, r *archRegs) classified {
	var c classified
	op, args := in.op, in.args
	arm := r.fp == "R29"
	last := in.dst()
	switch {
	case op == "CALL" || arm && op == "BL":
		c.kind, c.target = kCall, last
		c.fpRead = len(args) > 0 && r.fpRE.MatchString(last)
		return c
	case op == "JMP" || arm && op == "B":
		c.kind, c.target = jumpKind(last), last
		return c
	case !arm && strings.HasPrefix(op, "J") || arm && armCond[op]:
		c.kind, c.target = kCondJump, last
		return c
	case op == "RET":
		c.kind = kRet
		return c
	case op == "UNDEF" || op == "INT" || op == "BRK" || op == "HLT":
		c.kind = kTrap
		return c
	}
	if len(args) == 0 {
		return c
	}
	srcs := args[:len(args)-1]
	for _, a := range srcs {
		if r.fpRE.MatchString(a) {
			c.fpRead = true
			if strings.HasPrefix(a, "(") && strings.Contains(a, ",") || isRegName(a) {
				// A register operand (or a register pair) being stored or moved.
				if isMem(last) || strings.HasPrefix(op, "ST") {
					c.fpSave = true
				}
			}
		}
	}
	if op == "PUSHQ" && last == r.fp {
		c.fpSave = true
		c.fpRead = true
	}
	if isMem(last) && r.fpRE.MatchString(memBase(last)) {
		c.fpRead = true
	}
	if noDest[op] || strings.HasPrefix(op, "ST") && arm || isMem(last) {
		if isMem(last) && r.fpRE.MatchString(last) {
			c.fpRead = true
		}
		return c
	}
	// The destination: a register, or a register pair for LDP-style loads.
	dests := []string{last}
	if strings.HasPrefix(last, "(") && strings.Contains(last, ",") {
		dests = strings.Split(strings.Trim(last, "()"), ",")
		for i := range dests {
			dests[i] = strings.TrimSpace(dests[i])
		}
	}
	// The value's source.
	var src string
	switch len(srcs) {
	case 0:
	case 1:
		src = srcs[0]
	default:
		// arm64 three-operand form: OP $imm, Rn, Rd; OP Rm, Rn, Rd.
		src = srcs[1]
	}
	copyFrom, zero, load, loadBase, offset := "", false, false, "", false
	bareOp := baseOp(op)
	switch {
	case op == "POPQ" || op == "POPL":
		load, loadBase = true, r.sp
	case strings.HasPrefix(op, "MOV") || strings.HasPrefix(op, "LD"):
		switch {
		case isZeroImm(src) || src == "ZR":
			zero = true
		case isRegName(src):
			copyFrom = src
		case isMem(src):
			load, loadBase = true, memBase(src)
		}
	case strings.HasPrefix(op, "LEA"):
		copyFrom = memBase(src)
	case bareOp == "XOR" || bareOp == "EOR" || bareOp == "SUB":
		if len(srcs) == 1 && src == dests[0] || len(srcs) == 2 && srcs[0] == srcs[1] {
			zero = true
		} else if len(srcs) > 0 && isImm(srcs[0]) {
			copyFrom = dests[0]
			if len(srcs) == 2 {
				copyFrom = srcs[1]
			}
		} else if bareOp == "SUB" {
			offset = isRegName(srcs[0]) && (len(srcs) == 1 || srcs[1] == dests[0])
		}
	case bareOp == "ADD" || bareOp == "AND" || bareOp == "OR" || op == "ADJSP":
		if bareOp == "ADD" && len(srcs) > 0 && isRegName(srcs[0]) {
			offset = len(srcs) == 1 || srcs[1] == dests[0]
		}
		if op == "ADJSP" || len(srcs) > 0 && isImm(srcs[0]) {
			copyFrom = dests[0]
			if len(srcs) == 2 {
				copyFrom = srcs[1]
			}
			if bareOp == "AND" && len(srcs) > 0 && isZeroImm(srcs[0]) {
				zero, copyFrom = true, ""
			}
		}
	}
	if op == "ADJSP" {
		c.sp = sAdjust
		return c
	}
	for _, d := range dests {
		switch d {
		case r.fp:
			switch {
			case zero:
				c.fp = eClear
			case copyFrom == r.sp || copyFrom == "SP":
				c.fp = eFromSP
			case copyFrom == r.fp:
				c.fpRead = true
			case copyFrom != "":
				c.fp, c.fpSrc = eFromReg, copyFrom
			case load && (loadBase == r.sp || loadBase == "SP" || loadBase == r.fp):
				c.fp = eRestore
			case load:
				c.fp = eLoad
				c.savedCtx = strings.Contains(src, "gobuf_bp") || strings.Contains(src, "syscallbp")
			default:
				c.fp = eOther
			}
		case r.sp:
			switch {
			case copyFrom == r.sp:
				c.sp = sAdjust
			case copyFrom != "":
				c.sp, c.spSrc = sFromReg, copyFrom
			default:
				c.sp = sSwitch
			}
		default:
			c.def = d
			c.defSrc = copyFrom
			c.defOffset = offset
		}
	}
	return c
}

// jumpKind classifies a jump target. A name that is not a label of the
// function is a register (an indirect jump); the CFG builder decides that.
func jumpKind(t string) kind {
	switch {
	case strings.HasSuffix(t, "(SB)"):
		return kTail
	case strings.HasPrefix(t, "("):
		return kIndirect
	}
	return kJump
}

// baseOp strips the operand-size suffix of arithmetic mnemonics.
func baseOp(op string) string {
	for _, b := range []string{"XOR", "EOR", "SUB", "ADD", "AND", "ORR", "OR"} {
		if op == b || len(op) == len(b)+1 && strings.HasPrefix(op, b) && strings.ContainsAny(op[len(b):], "QLWBD") {
			return b
		}
	}
	return op
}
