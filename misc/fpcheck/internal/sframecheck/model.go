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

// Expected is what the model says at one PC.
type Expected struct {
	SPDelta int32
	CFA     int32 // CFA = SP + CFA
	RASaved bool  // the RA is in memory, at CFA+RA (else in LR: arm64 only)
	RA      int32
	FPSaved bool // the caller's FP is in memory, at CFA+FP
	FP      int32
}

// A Model is one function's frame as the model describes it.
type Model struct {
	arch    string
	f       *gobin.Func
	code    []byte
	runs    []gobin.ValueRun
	saveEnd uint64 // offset just past the instruction saving the caller's FP; 0 if none
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
	m = &Model{arch: b.Arch, f: f, code: code, runs: runs, saveEnd: fpSaveEnd(b.Arch, code)}
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
	e := Expected{SPDelta: spd}
	saved := m.saveEnd != 0 && pc-m.f.Entry >= m.saveEnd
	if m.arch == "arm64" {
		e.CFA = spd + m.above
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
	e.FPSaved, e.FP = saved && spd >= 8, -16
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
// instructions; 0 if there is none.
func fpSaveEnd(arch string, code []byte) uint64 {
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
				return uint64(off)
			}
			continue
		}
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			return 0
		}
		off += inst.Len
		if inst.Op == x86asm.PUSH && inst.Args[0] == x86asm.RBP {
			return uint64(off)
		}
	}
	return 0
}
