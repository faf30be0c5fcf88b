package sframecheck

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
)

// The model of a Go frame that the section is checked against, from the
// pclntab's SP delta (spd: bytes the function has pushed or allocated) and
// the prologue's code:
//
//   - amd64: CFA = SP + spd + 8, the return address at CFA-8. The prologue
//     is PUSHQ BP; MOVQ SP, BP; SUBQ $n, SP, so once BP is pushed (spd >= 8)
//     the caller's BP is at CFA-16, until POPQ BP brings spd back to 0.
//   - arm64: CFA = SP + spd. Until the frame is allocated (spd = 0) the
//     return address is in LR; after it, at the bottom of the frame the
//     prologue allocated (its size is the first positive SP delta, which
//     later SP adjustments around a call do not move), CFA-size, and the
//     caller's R29 just below it, CFA-size-8, once the instruction that
//     stores it has run (MOVD R29, -8(RSP) follows the MOVD.W that
//     allocates a small frame; a large frame stores both with STP before
//     it moves SP). A function the signal handler injects a call to
//     (fpchain.InjectedCalls) has 16 more bytes above its frame.
//     An assembly function that allocates its frame with SUB $n, RSP
//     (NOFRAME, as crosscall2) keeps the return address in LR until it
//     stores the pair STP (R29, R30), off(RSP), and again from the LDP
//     that reloads it; in between LR is at SP+off+8 and R29 at SP+off.
//
// Once the frame-pointer register points at the function's own record
// (fpchain.InFrameRecord), the CFA can also be given from it: BP+16 on
// amd64, R29+size+8 on arm64.
//
// The model reads what each instruction does, not the function's name:
//
//   - amd64 assembly that allocates first and stores the caller's BP with
//     MOVQ BP, off(SP) (PUSH_REGS_HOST_TO_ABI0, as _rt0_amd64_lib) saves
//     it as surely as PUSHQ BP: the slot's CFA offset is taken from the
//     store. From the first instruction that writes the frame-pointer
//     register other than by reloading it, in code order, until one that
//     reloads it (POPQ BP, a load from the save slot; LDR, LDP on arm64),
//     the register no longer holds the caller's value, so where the
//     function has saved it a rule that leaves the frame pointer untracked
//     is wrong (FPInReg).
//   - arm64 RET Xn through a register other than LR (asyncPreempt's
//     RET (R27)): the return address is in a register no SFrame rule of a
//     default FDE can name, so the only right rule is outermost (RAReg).

// Expected is what the model says at one PC.
type Expected struct {
	SPDelta int32
	CFA     int32 // CFA = SP + CFA
	RASaved bool  // the RA is in memory, at CFA+RA (else in LR: arm64 only)
	RA      int32
	FPSaved bool // the caller's FP is in memory, at CFA+FP
	FP      int32
	FPInReg bool   // the frame-pointer register still holds the caller's FP
	RAReg   string // the instruction returns through this register, not LR (arm64)
}

// A Model is one function's frame as the model describes it.
type Model struct {
	arch    string
	f       *gobin.Func
	code    []byte
	runs    []gobin.ValueRun
	saveEnd uint64 // offset just past the instruction saving the caller's FP; 0 if none
	fpSlot  int32  // amd64: the save slot's offset from the CFA
	fpOut   []span // offsets where the frame-pointer register does not hold the caller's FP
	frame   int32  // arm64: bytes from the frame record's LR slot to the CFA
	above   int32  // arm64: bytes between the entry SP and the CFA (an injected call's)

	// arm64, a frame allocated by SUB: the pair's store and reload (offsets
	// just past them; 0 if none) and the saved LR's offset from the CFA.
	pair                 bool
	pairSave, pairReload uint64
	pairRA               int32
}

// NewModel reads f's SP-delta table and prologue; ok is false if the table
// does not describe all of f.
func NewModel(b *gobin.Binary, f *gobin.Func) (m *Model, ok bool) {
	runs, ok := f.SPDeltaRuns()
	if !ok {
		return nil, false
	}
	code, err := b.Code(f)
	if err != nil {
		return nil, false
	}
	m = &Model{arch: b.Arch, f: f, code: code, runs: runs, fpSlot: -16}
	var saveDisp int64
	m.saveEnd, saveDisp = fpSaveEnd(b.Arch, code)
	if b.Arch != "arm64" && saveDisp >= 0 {
		// MOVQ BP, disp(SP): the slot is disp above SP, SP is
		// CFA-(spd+8) after the store.
		m.fpSlot = int32(saveDisp) - (m.At(f.Entry+m.saveEnd-1).SPDelta + 8)
	}
	m.fpOut = fpOutSpans(b.Arch, code, saveDisp)
	if b.Arch == "arm64" {
		if slices.Contains(fpchain.InjectedCalls, f.Name) {
			m.above = 16
		}
		if i := slices.IndexFunc(runs, func(r gobin.ValueRun) bool { return r.Value > 0 }); i >= 0 {
			m.frame = runs[i].Value + m.above
			m.findPair(runs[i].Start)
		}
	}
	return m, true
}

// findPair looks for a frame allocated by SUB $n, RSP (the instruction
// before alloc) and the frame record it stores by hand.
func (m *Model) findPair(alloc uint64) {
	at := func(pc uint64) string {
		off := pc - m.f.Entry
		if pc < m.f.Entry || off+4 > uint64(len(m.code)) {
			return ""
		}
		inst, err := arm64asm.Decode(m.code[off:])
		if err != nil {
			return ""
		}
		return inst.String()
	}
	// (An injected call also allocates with SUB, having stored its
	// frame record first.)
	if m.above != 0 || !strings.HasPrefix(at(alloc-4), "SUB SP, SP, #") {
		return
	}
	for _, r := range m.runs {
		for pc := r.Start; pc < r.End && r.Value > 0; pc += 4 {
			s := at(pc)
			switch {
			case m.pairSave == 0 && s == fmt.Sprintf("STP X29, X30, [SP,#%d]", pairOffset(s)):
				m.pairSave, m.pairRA = pc+4-m.f.Entry, pairOffset(s)+8-r.Value
			case m.pairSave != 0 && m.pairReload == 0 && s == fmt.Sprintf("LDP X29, X30, [SP,#%d]", pairOffset(s)):
				m.pairReload = pc + 4 - m.f.Entry
			}
		}
	}
	// Without the pair's store (mcall, which switches stacks and calls
	// out) the function is left to the general rule.
	m.pair = m.pairSave != 0
}

// pairOffset is the offset of an "STP/LDP X29, X30, [SP,#off]".
func pairOffset(s string) int32 {
	var off int32
	if _, after, ok := strings.Cut(s, "[SP,#"); ok {
		fmt.Sscanf(after, "%d]", &off)
	}
	return off
}

// Insts calls fn for the start of every instruction the SP-delta table
// describes, with the SP delta there: an unwinder only ever sees a thread
// stopped at an instruction boundary. amd64 code is decoded linearly from
// the entry (Go puts no data in its text); a byte that does not decode
// counts as an instruction of its own.
func (m *Model) Insts(fn func(pc uint64, e Expected)) {
	off := uint64(0)
	for _, r := range m.runs {
		for pc := max(r.Start, m.f.Entry+off); pc < r.End; {
			fn(pc, m.expect(pc, r.Value))
			n := uint64(4)
			if m.arch != "arm64" {
				n = 1
				if inst, err := x86asm.Decode(m.code[pc-m.f.Entry:], 64); err == nil {
					n = uint64(inst.Len)
				}
			}
			pc += n
			off = pc - m.f.Entry
		}
	}
}

// CodeEnd is the end of the code the SP-delta table describes: the
// function's end less its alignment padding.
func (m *Model) CodeEnd() uint64 {
	if len(m.runs) == 0 {
		return m.f.Entry
	}
	return m.runs[len(m.runs)-1].End
}

// At returns the model at pc, in the function.
func (m *Model) At(pc uint64) Expected {
	spd := int32(0)
	for _, r := range m.runs {
		if pc < r.End {
			spd = r.Value
			break
		}
	}
	return m.expect(pc, spd)
}

func (m *Model) expect(pc uint64, spd int32) Expected {
	e := Expected{SPDelta: spd, FPInReg: true}
	saved := m.saveEnd != 0 && pc-m.f.Entry >= m.saveEnd
	for _, o := range m.fpOut {
		if off := pc - m.f.Entry; off >= o.start && off < o.end {
			e.FPInReg = false
		}
	}
	if m.arch == "arm64" {
		e.CFA = spd + m.above
		if off := pc - m.f.Entry; off+4 <= uint64(len(m.code)) {
			if inst, err := arm64asm.Decode(m.code[off:]); err == nil && inst.Op == arm64asm.RET {
				if r, ok := inst.Args[0].(arm64asm.Reg); ok && r != arm64asm.X30 {
					e.RAReg = r.String()
				}
			}
		}
		if m.pair {
			if off := pc - m.f.Entry; off >= m.pairSave && (m.pairReload == 0 || off < m.pairReload) {
				e.RASaved, e.RA = true, m.pairRA
				e.FPSaved, e.FP = true, m.pairRA-8
			}
			return e
		}
		if spd > 0 {
			e.RASaved, e.RA = true, -m.frame
			e.FPSaved, e.FP = saved, -m.frame-8
		}
		return e
	}
	e.CFA = spd + 8
	e.RASaved, e.RA = true, -8
	e.FPSaved, e.FP = saved && spd >= 8, m.fpSlot
	return e
}

// InRecord reports whether the frame-pointer register points at the
// function's own frame record at pc, so that the CFA is FP+RecordCFA(e).
func (m *Model) InRecord(pc uint64, e Expected) bool {
	return e.FPSaved && fpchain.InFrameRecord(fpchain.Frame{Arch: m.arch, PC: pc, Entry: m.f.Entry, Code: m.code})
}

// RecordCFA is the CFA's offset from the frame-pointer register when it
// points at the function's record.
func (m *Model) RecordCFA(e Expected) int32 {
	if m.arch == "arm64" {
		return -e.FP
	}
	return 16
}

// fpSaveEnd returns the offset just past the prologue instruction that
// saves the caller's frame pointer, searched in the first dozen
// instructions; 0 if there is none. disp is the SP offset an amd64 MOVQ
// BP, disp(SP) stored it at; -1 for a push or on arm64.
func fpSaveEnd(arch string, code []byte) (end uint64, disp int64) {
	for off, n := 0, 0; off < len(code) && n < 12; n++ {
		if arch == "arm64" {
			inst, err := arm64asm.Decode(code[off:])
			off += 4
			if err != nil {
				continue
			}
			s := inst.String()
			// MOVD R29, -8(RSP) (STUR), or STP (R29, R30), off(Rn): the
			// prologue's, a large frame's through R20, or an assembly
			// function's own below SP (debugCallV2).
			if strings.HasPrefix(s, "STUR X29, [SP,#-8]") || strings.HasPrefix(s, "STP X29, X30, [") {
				return uint64(off), -1
			}
			continue
		}
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			return 0, -1
		}
		off += inst.Len
		if inst.Op == x86asm.PUSH && inst.Args[0] == x86asm.RBP {
			return uint64(off), -1
		}
		if mem, ok := inst.Args[0].(x86asm.Mem); ok && inst.Op == x86asm.MOV && inst.Args[1] == x86asm.RBP &&
			mem.Base == x86asm.RSP && mem.Index == 0 && mem.Segment == 0 {
			return uint64(off), mem.Disp
		}
	}
	return 0, -1
}

// A span is a range [start, end) of offsets in a function.
type span struct{ start, end uint64 }

// fpOutSpans returns where, in code order, the frame-pointer register
// does not hold the caller's value: from just past an instruction that
// writes it until just past one that reloads it (POPQ BP, MOVQ
// saveDisp(SP), BP; LDR or LDP into R29). Branches are not followed: code
// after a return is taken as reached with the register restored.
func fpOutSpans(arch string, code []byte, saveDisp int64) []span {
	var out []span
	in := true
	for off := 0; off < len(code); {
		n := 1
		writes, reloads := false, false
		if arch == "arm64" {
			n = 4
			if off+4 > len(code) {
				break
			}
			inst, err := arm64asm.Decode(code[off:])
			if err == nil {
				writes, reloads = arm64WritesFP(inst)
			}
		} else if inst, err := x86asm.Decode(code[off:], 64); err == nil {
			n = inst.Len
			writes, reloads = amd64WritesFP(inst, saveDisp)
		}
		end := uint64(off + n)
		switch {
		case reloads && !in:
			out[len(out)-1].end = end
			in = true
		case writes && !reloads && in:
			out = append(out, span{end, uint64(len(code))})
			in = false
		}
		off += n
	}
	return out
}

// amd64WritesFP says whether inst writes BP, and whether it reloads the
// caller's value (POPQ BP, or a load from the slot at saveDisp(SP)).
func amd64WritesFP(inst x86asm.Inst, saveDisp int64) (writes, reloads bool) {
	switch inst.Op {
	case x86asm.PUSH, x86asm.CMP, x86asm.TEST, x86asm.CALL, x86asm.JMP, x86asm.RET:
		return false, false
	case x86asm.POP:
		return inst.Args[0] == x86asm.RBP, inst.Args[0] == x86asm.RBP
	}
	r, ok := inst.Args[0].(x86asm.Reg)
	if !ok || r != x86asm.RBP && r != x86asm.EBP && r != x86asm.BP {
		return false, false
	}
	mem, ok := inst.Args[1].(x86asm.Mem)
	reload := inst.Op == x86asm.MOV && ok && mem.Base == x86asm.RSP && mem.Index == 0 && saveDisp >= 0 && mem.Disp == saveDisp
	return true, reload
}

// arm64WritesFP says whether inst writes R29, and whether it is a load
// (the epilogue's reload of the caller's value).
func arm64WritesFP(inst arm64asm.Inst) (writes, reloads bool) {
	switch inst.Op {
	case arm64asm.STR, arm64asm.STUR, arm64asm.STP, arm64asm.CMP, arm64asm.RET, arm64asm.BL, arm64asm.B, arm64asm.CBZ, arm64asm.CBNZ:
		return false, false
	}
	dst := func(a arm64asm.Arg) bool {
		r, ok := a.(arm64asm.Reg)
		return ok && r == arm64asm.X29
	}
	w := dst(inst.Args[0]) || (inst.Op == arm64asm.LDP && dst(inst.Args[1]))
	load := inst.Op == arm64asm.LDR || inst.Op == arm64asm.LDUR || inst.Op == arm64asm.LDP
	return w, w && load
}
