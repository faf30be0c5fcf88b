package sframecheck

import (
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
//     return address is in LR; after it, at the bottom of the frame,
//     CFA-spd, and the caller's R29 just below it, CFA-spd-8, once the
//     instruction that stores it has run (MOVD R29, -8(RSP) follows the
//     MOVD.W that allocates a small frame; a large frame stores both with
//     STP before it moves SP).
//
// Once the frame-pointer register points at the function's own record
// (fpchain.InFrameRecord), the CFA can also be given from it: BP+16 on
// amd64, R29+spd+8 on arm64.

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
	return &Model{arch: b.Arch, f: f, code: code, runs: runs, saveEnd: fpSaveEnd(b.Arch, code)}, true
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
		e.CFA = spd
		if spd > 0 {
			e.RASaved, e.RA = true, -spd
			e.FPSaved, e.FP = saved, -spd-8
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
		return e.SPDelta + 8
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
			// MOVD R29, -8(RSP) (STUR), or STP (R29, R30), -8(Rn).
			if strings.HasPrefix(s, "STUR X29, [SP,#-8]") || strings.HasPrefix(s, "STP X29, X30, [") && strings.HasSuffix(s, "#-8]") {
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
