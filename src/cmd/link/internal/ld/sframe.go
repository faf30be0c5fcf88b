// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// This file emits a .sframe section (SFrame format version 3, as
// specified by binutils 2.46) in a PT_GNU_SFRAME segment for
// linux/amd64 and linux/arm64 binaries, so that SFrame-aware
// unwinders (perf, the kernel's deferred user unwinder, glibc) can find
// the caller at every PC of every Go function, including frameless
// leaves, prologues and epilogues, where a frame-pointer walk loses one
// frame.
//
// Layout. The 28-byte header; the function descriptor index (16 bytes
// per descriptor, sorted by start address, start addresses relative to
// the index field itself: flags SFRAME_F_FDE_SORTED and
// SFRAME_F_FDE_FUNC_START_PCREL); then the FRE sub-section, holding for
// each descriptor its 5-byte attributes followed by its frame row
// entries. A descriptor covers a function and, where their rules allow,
// the functions right after it (sframeJoins): every Go function ends
// with the rule it started with (after its epilogue, and in its
// stack-split call), which is the first rule of the next, so the next
// function's rows can follow its predecessor's, less that first row, in
// one descriptor of at most sframeJoinRows rows. The rule at every PC is
// the same as with a descriptor per function; the alignment padding
// between them is covered too, and an unwinder's scan of a descriptor's
// rows stays short. Version 3 locates a descriptor's attributes and rows
// by an offset in its index entry; descriptors whose attributes and rows
// encode to the same bytes (a leaf, or a frame of the same size and
// shape, alone) point at one copy of them. The header's FRE count is
// the sum of the descriptors' row counts, as a reader that adds them up
// finds it; the FRE sub-section's length is what is stored. Every FDE
// has the default FDE type and the increment PC type; the width of FRE
// start offsets (1, 2 or 4 bytes) is chosen per descriptor from its
// size, the width of data words (1, 2 or 4 bytes) per row from its
// largest offset, and consecutive rows with the same rule are merged.
// The rows depend on the text layout only through the distances between
// functions, final after textaddress, so the size is known then and a
// generator writes the section once its own address is final.
//
// Rows come from the function's pcsp table (the SP delta d at each PC,
// which the assembler keeps exact through prologues and epilogues), the
// function's flags (TOPFRAME, SPWRITE, ASM) and the machine code of the
// prologue, which the linker has at hand.
//
// amd64. The call pushed the return address: CFA = SP + d + 8 and the
// return address is at CFA-8 (fixed in the header). A function has a
// frame record if the instruction that first raises d from 0 to 8 is
// PUSHQ BP (byte 0x55); the assembler emits PUSHQ BP; MOVQ SP, BP;
// SUBQ $n, SP for every function with a frame or a call that is not
// NOFRAME (cmd/internal/obj/x86/obj6.go), and ADDQ $n, SP; POPQ BP
// before each RET. In such a function the caller's BP is at CFA-16
// exactly where d >= 8: from just after PUSHQ BP until POPQ BP brings d
// back to 0 (code after a RET has d restored by the assembler).
// Compiled Go code never writes BP, so once MOVQ SP, BP has run the
// CFA is BP+16 until POPQ BP, through the epilogue's ADDQ; those rows
// are BP-based, which saves a row per return and keeps the offsets in
// one byte. Assembly functions may use BP as a scratch register after
// the prologue: their rows stay SP-based (except for stack switches,
// below). Assembly that allocates its frame first and stores BP with
// MOVQ BP, (d-8)(SP) as its next instruction (PUSH_REGS_HOST_TO_ABI0, in
// _rt0_amd64_lib and the other C-ABI entries) saves the caller's BP at
// CFA-16 just as PUSHQ BP would: the rows say so from after the store
// until the frame is freed, since such a function then overwrites BP
// (_rt0_amd64_lib clears it). Other functions get no FP rule: the
// register still holds the caller's value.
//
// arm64. BL does not push: CFA = SP + d, and there is no fixed RA
// offset. The prologue either stores LR and allocates the frame in one
// instruction (MOVD.W R30, -F(RSP)) and stores the caller's FP at
// -8(RSP) in the next, or, for frames too large for MOVD.W, stores both
// with STP (R29, R30), -8(R20) before MOVD R20, RSP
// (cmd/internal/obj/arm64/obj7.go). The first instruction with d = F > 0
// is therefore where LR is saved at CFA-F, and the caller's FP is saved
// at CFA-F-8 from that instruction (STP form) or the next (MOVD.W
// form). Rows carry CFA, RA and FP offsets, CFA and RA only in the
// instruction between the two stores, or only the CFA offset where LR
// still holds the return address (frameless leaves, the stack-split
// check, after the epilogue's MOVD.P). The epilogue reloads R29 one
// instruction before it pops the frame; the rows there still name the
// saved slots, which hold the same values. asyncPreempt and debugCallV2
// are entered by an injected call with SP 16 bytes below the
// interrupted frame's SP: their CFA offsets include those 16 bytes.
// asyncPreempt returns with RET (R27) after reloading LR with the
// interrupted function's LR: a default FDE cannot say "RA in R27", and
// "RA in LR" would skip the interrupted frame, so the row at any RET
// through a register other than LR has no data words, RA undefined
// (sframeRegReturns): an unwinder stops there rather than go wrong.
//
// Outermost frames. The process entry points (_rt0_GOARCH_GOOS and the
// _rt0_GOARCH it jumps to, where the word at SP is argc, not a return
// address; not the _lib entries of c-shared libraries and plugins, which
// the dynamic loader calls) and every TOPFRAME function (goexit, mstart, rt0_go,
// the clone child's entry, sigtramp, crosscall2's C-entry side and the
// other C-ABI entries the runtime marks) gets a single row with no data
// words, the format's "RA undefined" marker: the unwinder stops there,
// as gentraceback does and as the frame-pointer chain does, which the
// fork terminates at each of them (doc/fp-boundaries.md). The signal
// handler entries (sigtramp, cgoSigtramp, sigprofNonGoWrapper) and the
// sa_restorer trampoline (sigreturn__sigaction) also get the FDE's
// signal-frame bit, and are outermost too: the fork's chain ends at
// sigtramp and the runtime's tracebacks do not continue into the
// interrupted context either.
//
// Stack switches. A function that writes SP other than by the Go
// prologue and epilogue is marked SPWRITE by the assembler; after the
// write its pcsp delta no longer describes SP.
//
//   - systemstack, asmcgocall, the vDSO callers (nanotime1, walltime,
//     time.now, vgetrandom1), callCgo*, sigfwd, switchToCrashStack0:
//     SPWRITE with a frame record. They switch SP to g0 (or another
//     stack) but leave the frame pointer on their own frame record, so
//     the frame-pointer chain links from the callee back into the
//     goroutine's frames (doc/fp-boundaries.md). Once the frame pointer
//     register is set (after MOVQ SP, BP; after SUB $8, RSP, R29 on
//     arm64) their CFA is FP-based (BP+16; R29+F+8), which stays right
//     while SP is on the other stack, until the epilogue reloads the
//     frame pointer (POPQ BP; MOVD -8(RSP), R29 or LDP on arm64).
//   - mcall: switches to g0 and clears the frame pointer before calling
//     fn (the goroutine may resume on another M): outermost throughout.
//     On amd64 it has a frame record, so it is named here; on arm64 it
//     falls under the next rule.
//   - morestack, gogo, the clone child and any other SPWRITE function
//     without a frame record: no register describes the caller once SP
//     is switched, and these are where the runtime clears the frame
//     pointer (morestack) or never returns (gogo): outermost throughout,
//     as gentraceback stops at an SPWRITE function that is not the
//     innermost frame. A sample at their first instructions, before the
//     switch, loses its callers.
//
// A link never fails for the table: where it cannot be written (more
// than 65535 rows in one function, or the external link's carrier,
// below) the linker prints one warning and the binary has no table.
//
// Scope. Every text symbol with function info (everything in the
// pclntab) gets an FDE; host object code linked internally has no pcsp
// table and is left out, as are the go:textfipsstart/end markers and
// arm64 trampolines the linker inserts for very large binaries.
//
// External linking. The system linker must merge the Go object's table
// with the C objects' and write the program header. GNU ld 2.40 (Debian
// 12) knows only SFrame version 1; for it the Go object carries a version
// 1 carrier that sframe_hostlink.go rewrites as version 3 after the link.
// With other system linkers (gold, lld, mold, other GNU ld versions) the
// Go object carries no .sframe, and a cgo binary linked by them has only
// what the C objects bring. A c-archive carries none: the system linker
// that links its Go object runs later, outside this link.
//
// arm64 assembly. crosscall2 (NOFRAME) allocates its frame with SUB and
// saves the frame record later with STP (R29, R30), off(RSP): LR holds
// the return address until that store and again after the LDP that
// reloads it, and the record's slots describe it in between
// (sframePairRows).
//
// -sframe=false turns the section off.

package ld

import (
	"cmd/internal/obj"
	"cmd/internal/objabi"
	"cmd/internal/sys"
	"cmd/link/internal/loader"
	"cmd/link/internal/sym"
	"debug/elf"
	"encoding/binary"
	"flag"
	"internal/abi"
	"slices"
	"strings"
)

var flagSframe = flag.Bool("sframe", true, "emit a .sframe section (SFrame v3) in a PT_GNU_SFRAME segment (linux/amd64, linux/arm64; internal linking, or external with GNU ld 2.40)")

// SFrame version 3 constants (binutils 2.46 SFrame specification).
const (
	sframeMagic      = 0xdee2
	sframeVersion3   = 3
	sframeFSorted    = 0x1
	sframeFPCRel     = 0x4
	sframeABIARM64LE = 2
	sframeABIAMD64LE = 3

	sframeHeaderSize = 28
	sframeIndexSize  = 16 // sframe_func_desc_idx: int64 start, uint32 size, uint32 FRE offset
	sframeAttrSize   = 5  // sframe_func_desc_attr: uint16 nfres, info, info2, rep size

	sframeFREAddr1 = 0
	sframeFREAddr2 = 1
	sframeFREAddr4 = 2

	sframeWord1 = 0
	sframeWord2 = 1
	sframeWord4 = 2

	sframeBaseFP = 0
	sframeBaseSP = 1

	sframeSignalBit = 1 << 7

	ptGNUSframe  = 0x6474e554
	shtGNUSframe = 0x6ffffff4
)

// sframeRow is one frame row: the rule for PCs from off (relative to
// the function start) up to the next row.
type sframeRow struct {
	off       uint32
	undefined bool  // outermost: RA undefined, no data words
	baseFP    bool  // CFA = FP + cfa rather than SP + cfa
	cfa       int32 // CFA offset from the base register
	ra        int32 // RA at CFA+ra; 0: fixed (amd64) or in LR (arm64)
	fp        int32 // caller's FP at CFA+fp; 0: not saved
}

func (r sframeRow) sameRule(o sframeRow) bool {
	r.off = o.off
	return r == o
}

// sframeFunc is one descriptor, for the function s and any functions
// after it that it takes in (sframeJoins), size bytes in all; its
// attributes and encoded rows are fres[off:end] of the section's FRE
// sub-section.
type sframeFunc struct {
	s        loader.Sym
	size     int64
	off, end int
}

// sframeSpan is one entry of a pcsp table: SP delta d on [pc, next).
type sframeSpan struct {
	pc, next uint32
	d        int32
}

// sframeState holds the buffers reused from function to function.
type sframeState struct {
	pcsp  *obj.PCIter
	spans []sframeSpan
	rows  []sframeRow
}

// sframeEnabled reports whether the link emits .sframe.
func (ctxt *Link) sframeEnabled() bool {
	return *flagSframe && ctxt.HeadType == objabi.Hlinux && ctxt.IsELF &&
		(ctxt.IsAMD64() || ctxt.IsARM64()) &&
		(ctxt.IsInternal() || ctxt.BuildMode == BuildModeExe || ctxt.BuildMode == BuildModePIE || ctxt.BuildMode == BuildModeCShared || ctxt.BuildMode == BuildModePlugin)
}

// sframe creates the .sframe section symbol. It runs after textaddress,
// when the text symbols and their order are final; the contents are
// written by a generator once the section's own address is known.
func (ctxt *Link) sframe() {
	if !ctxt.sframeEnabled() {
		return
	}
	var hostOK chan bool
	if ctxt.IsExternal() {
		// Ask which system linker will run while the rows are built.
		hostOK = make(chan bool, 1)
		query := ctxt.sframeHostLinkerQuery()
		go func() { hostOK <- sframeHostLinkerOK(query) }()
	}
	ldr := ctxt.loader
	var funcs []sframeFunc
	var fres []byte
	st := &sframeState{pcsp: obj.NewPCIter(uint32(ctxt.Arch.MinLC))}
	nfres := 0
	shared := map[string]int{} // encoded attributes and rows -> offset in fres

	// The descriptor being built: it covers [start, end), from the entry
	// of the function first to the end of the function last, and can
	// take in the next function only if last is the text symbol right
	// before it.
	var (
		first, last loader.Sym
		start, end  int64
		rows        []sframeRow
	)
	flush := func() bool {
		if first == 0 {
			return true
		}
		if len(rows) > 0xffff {
			sframeWarn("%s: %d frame rows do not fit an SFrame FDE", ldr.SymName(first), len(rows))
			return false
		}
		off := len(fres)
		fres = sframeEncode(ctxt, first, end-start, rows, fres)
		if prev, ok := shared[string(fres[off:])]; ok {
			// The same attributes and rows as an earlier function:
			// point at those.
			n := len(fres) - off
			fres = fres[:off]
			funcs = append(funcs, sframeFunc{s: first, size: end - start, off: prev, end: prev + n})
		} else {
			shared[string(fres[off:])] = off
			funcs = append(funcs, sframeFunc{s: first, size: end - start, off: off, end: len(fres)})
		}
		nfres += len(rows)
		return true
	}
	var prevText loader.Sym // the text symbol before s
	for _, s := range ctxt.Textp {
		fi := ldr.FuncInfo(s)
		size := ldr.SymSize(s)
		if !fi.Valid() || size == 0 {
			prevText = s
			continue
		}
		r := sframeRows(ctxt, st, s, fi)
		if prevText != 0 && prevText == last && sframeJoins(ctxt, first, start, end, rows, s, r) {
			for _, row := range r[1:] {
				row.off += uint32(ldr.SymValue(s) - start)
				rows = append(rows, row)
			}
			end = ldr.SymValue(s) + size
			last, prevText = s, s
			continue
		}
		if !flush() {
			return
		}
		first, last, prevText = s, s, s
		start, end = ldr.SymValue(s), ldr.SymValue(s)+size
		rows = append(rows[:0], r...)
	}
	if !flush() {
		return
	}
	slices.SortStableFunc(funcs, func(a, b sframeFunc) int {
		va, vb := ldr.SymValue(a.s), ldr.SymValue(b.s)
		switch {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})

	if ctxt.IsExternal() {
		if <-hostOK {
			ctxt.sframeCarrier(funcs, nfres, fres)
		}
		return
	}
	size := int64(sframeHeaderSize + sframeIndexSize*len(funcs) + len(fres))
	gen := func(ctxt *Link, s loader.Sym) {
		ctxt.writeSframe(s, funcs, nfres, fres)
	}
	s := ctxt.createGeneratorSymbol(".sframe", 0, sym.SELFROSECT, size, gen)
	ldr.SetAttrReachable(s, true)
	ldr.SetAttrLocal(s, true)
	ldr.SetSymAlign(s, 8)
}

// writeSframe fills in the section at its final address.
func (ctxt *Link) writeSframe(s loader.Sym, funcs []sframeFunc, nfres int, fres []byte) {
	ldr := ctxt.loader
	out := ldr.Data(s)
	le := binary.LittleEndian

	sframePutHeader(out, sframeVersion3, sframeFSorted|sframeFPCRel, ctxt.IsARM64(), len(funcs), nfres, len(fres), sframeIndexSize*len(funcs))

	base := ldr.SymValue(s)
	idx := out[sframeHeaderSize:]
	copy(idx[sframeIndexSize*len(funcs):], fres)
	for i, f := range funcs {
		e := idx[sframeIndexSize*i:]
		field := base + sframeHeaderSize + int64(sframeIndexSize*i)
		le.PutUint64(e[0:], uint64(ldr.SymValue(f.s)-field))
		le.PutUint32(e[8:], uint32(f.size))
		le.PutUint32(e[12:], uint32(f.off))
	}
}

// sframePutHeader writes the 28-byte header: the architecture's ABI and
// fixed RA offset (amd64's return address is always at CFA-8), no fixed
// FP offset (tracked per row), no auxiliary header, the index right after
// the header and the FRE sub-section at freoff after it.
func sframePutHeader(out []byte, version, flags byte, arm64 bool, nfdes, nfres, frelen, freoff int) {
	le := binary.LittleEndian
	abiArch, fixedRA := byte(sframeABIAMD64LE), int8(-8)
	if arm64 {
		abiArch, fixedRA = sframeABIARM64LE, 0
	}
	le.PutUint16(out[0:], sframeMagic)
	out[2], out[3], out[4], out[5], out[6], out[7] = version, flags, abiArch, 0, byte(fixedRA), 0
	le.PutUint32(out[8:], uint32(nfdes))
	le.PutUint32(out[12:], uint32(nfres))
	le.PutUint32(out[16:], uint32(frelen))
	le.PutUint32(out[20:], 0)
	le.PutUint32(out[24:], uint32(freoff))
}

// sframeEncode appends the descriptor attributes and the rows of a
// function of the given size.
func sframeEncode(ctxt *Link, s loader.Sym, size int64, rows []sframeRow, buf []byte) []byte {
	freType := sframeFREType(size)
	info := freType // increment PC type, PAC key A (unused)
	if sframeSignalTrampoline(ctxt.loader.SymName(s)) {
		info |= sframeSignalBit
	}
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(rows)))
	buf = append(buf, info, 0 /* default FDE type */, 0 /* rep size */)

	for _, r := range rows {
		switch freType {
		case sframeFREAddr1:
			buf = append(buf, byte(r.off))
		case sframeFREAddr2:
			buf = binary.LittleEndian.AppendUint16(buf, uint16(r.off))
		default:
			buf = binary.LittleEndian.AppendUint32(buf, r.off)
		}
		var wbuf [3]int32
		words := wbuf[:0]
		switch {
		case r.undefined:
		case ctxt.IsAMD64():
			words = append(words, r.cfa)
			if r.fp != 0 {
				words = append(words, r.fp)
			}
		default: // arm64: CFA [, RA [, FP]]
			words = append(words, r.cfa)
			if r.ra != 0 {
				words = append(words, r.ra)
				if r.fp != 0 {
					words = append(words, r.fp)
				}
			}
		}
		width := byte(sframeWord1)
		for _, w := range words {
			if w < -0x80 || w > 0x7f {
				width = max(width, sframeWord2)
			}
			if w < -0x8000 || w > 0x7fff {
				width = sframeWord4
			}
		}
		base := byte(sframeBaseSP)
		if r.baseFP {
			base = sframeBaseFP
		}
		buf = append(buf, width<<5|byte(len(words))<<1|base)
		for _, w := range words {
			switch width {
			case sframeWord1:
				buf = append(buf, byte(int8(w)))
			case sframeWord2:
				buf = binary.LittleEndian.AppendUint16(buf, uint16(int16(w)))
			default:
				buf = binary.LittleEndian.AppendUint32(buf, uint32(w))
			}
		}
	}
	return buf
}

// sframeJoinRows bounds the rows of a descriptor that takes in the
// functions after its first: an unwinder scans a descriptor's rows in
// order, so a shared descriptor costs it no more than one function with
// a few returns does.
const sframeJoinRows = 16

// sframeJoins reports whether the function s, with rows r, can share the
// descriptor of [start, end), which begins at the function first, has
// rows rows and ends with the text symbol right before s. The
// descriptor's last rule must be s's first (the entry rule: Go functions
// end with their stack-split call or epilogue, where SP is back at the
// entry), only alignment padding may lie between them, and the shared
// descriptor must stay within sframeJoinRows rows and 64 KB. s's rows
// then follow the descriptor's, less the first, and the rule at every
// PC of both functions is what their own descriptors would give. Signal
// trampolines keep descriptors of their own, for their signal-frame bit.
func sframeJoins(ctxt *Link, first loader.Sym, start, end int64, rows []sframeRow, s loader.Sym, r []sframeRow) bool {
	ldr := ctxt.loader
	addr := ldr.SymValue(s)
	newEnd := addr + ldr.SymSize(s)
	return len(r) > 0 && len(rows) > 0 && r[0].off == 0 && r[0].sameRule(rows[len(rows)-1]) &&
		len(rows)+len(r)-1 <= sframeJoinRows &&
		addr >= end && addr-end < int64(ctxt.Arch.MinLC)+int64(Funcalign) &&
		sframeFREType(newEnd-start) <= sframeFREAddr2 &&
		!sframeSignalTrampoline(ldr.SymName(first)) && !sframeSignalTrampoline(ldr.SymName(s))
}

// sframeFREType returns the width of row offsets for a descriptor of
// size bytes.
func sframeFREType(size int64) byte {
	switch {
	case size <= 0x100:
		return sframeFREAddr1
	case size <= 0x10000:
		return sframeFREAddr2
	}
	return sframeFREAddr4
}

// sframeSignalTrampoline reports whether the function is entered by the
// kernel on signal delivery or return (the FDE's signal-frame bit).
func sframeSignalTrampoline(name string) bool {
	switch name {
	case "runtime.sigtramp", "runtime.cgoSigtramp", "runtime.sigprofNonGoWrapper",
		"runtime.sigreturn__sigaction":
		return true
	}
	return false
}

// sframeRows returns the frame rows of text symbol s, in st.rows.
func sframeRows(ctxt *Link, st *sframeState, s loader.Sym, fi loader.FuncInfo) []sframeRow {
	ldr := ctxt.loader
	rows := st.rows[:0]
	defer func() { st.rows = rows[:0] }()
	if name := ldr.SymName(s); fi.TopFrame() || sframeSignalTrampoline(name) || name == "runtime.mcall" || strings.HasPrefix(name, "_rt0_") && !strings.HasSuffix(name, "_lib") {
		return append(rows, sframeRow{undefined: true})
	}
	code := ldr.Data(s)
	spwrite := fi.FuncFlag()&abi.FuncFlagSPWrite != 0

	spans := st.spans[:0]
	pcsp := st.pcsp
	for pcsp.Init(ldr.Data(ldr.Pcsp(s))); !pcsp.Done; pcsp.Next() {
		spans = append(spans, sframeSpan{pcsp.PC, pcsp.NextPC, pcsp.Value})
	}
	if len(spans) == 0 {
		spans = append(spans, sframeSpan{0, uint32(len(code)), 0})
	}
	st.spans = spans

	add := func(r sframeRow) {
		if n := len(rows); n > 0 && rows[n-1].sameRule(r) {
			return
		}
		if n := len(rows); n > 0 && rows[n-1].off == r.off {
			rows = rows[:n-1]
			if n > 1 && rows[n-2].sameRule(r) {
				return
			}
		}
		rows = append(rows, r)
	}

	switch ctxt.Arch.Family {
	case sys.AMD64:
		// Frame record: the instruction that first raises d to 8 is PUSHQ BP.
		var pushEnd, fpReady uint32
		hasFP := false
		for i, sp := range spans {
			if sp.d == 0 {
				continue
			}
			if sp.d == 8 && i > 0 && spans[i-1].d == 0 && sp.pc > 0 && code[sp.pc-1] == 0x55 {
				hasFP = true
				pushEnd = sp.pc
				fpReady = ^uint32(0)
				// MOVQ SP, BP
				if int(pushEnd)+3 <= len(code) && code[pushEnd] == 0x48 && code[pushEnd+1] == 0x89 && code[pushEnd+2] == 0xe5 {
					fpReady = pushEnd + 3
				}
			} else if i > 0 && spans[i-1].d == 0 && sp.d >= 16 && sp.d-8 < 0x80 && int(sp.pc)+5 <= len(code) &&
				code[sp.pc] == 0x48 && code[sp.pc+1] == 0x89 && code[sp.pc+2] == 0x6c && code[sp.pc+3] == 0x24 && int32(code[sp.pc+4]) == sp.d-8 {
				// MOVQ BP, (d-8)(SP) right after the frame is
				// allocated (PUSH_REGS_HOST_TO_ABI0): the caller's BP
				// is at CFA-16 from after the store, as if pushed.
				hasFP = true
				pushEnd = sp.pc + 5
				fpReady = ^uint32(0)
			}
			break
		}
		if spwrite && !hasFP {
			return append(rows, sframeRow{undefined: true})
		}
		// Compiled Go code never writes BP, so from MOVQ SP, BP to
		// POPQ BP the CFA is BP+16 whatever SP does; hand-written
		// assembly may use BP as a scratch register and keeps SP-based
		// rows unless it switches stacks.
		useFP := spwrite || fi.FuncFlag()&abi.FuncFlagAsm == 0
		for _, sp := range spans {
			r := sframeRow{off: sp.pc, cfa: sp.d + 8}
			if hasFP && sp.d >= 8 && sp.pc < pushEnd && pushEnd < sp.next {
				// The save falls inside this span: split it.
				add(r)
				r.off = pushEnd
			}
			saved := hasFP && sp.d >= 8 && r.off >= pushEnd
			if saved {
				r.fp = -16
			}
			if !(useFP && saved) || sp.next <= fpReady {
				add(r)
				continue
			}
			// CFA from BP once BP holds the frame record's address.
			if r.off < fpReady {
				add(r)
			}
			add(sframeRow{off: max(r.off, fpReady), baseFP: true, cfa: 16, fp: -16})
		}

	case sys.ARM64:
		const (
			strLRPre  = 0xf8000ffe // STR X30, [SP, #imm]! (MOVD.W R30, -F(RSP)); mask 0xffe00fff
			ldurFP    = 0xf85f83fd // LDUR X29, [SP, #-8] (MOVD -8(RSP), R29)
			ldpFPLR   = 0xa97ffbfd // LDP X29, X30, [SP, #-8]
			sturFP    = 0xf81f83fd // STUR X29, [SP, #-8] (MOVD R29, -8(RSP))
			movSPR20  = 0x9100029f // MOV SP, X20 (MOVD R20, RSP)
			subFPSP8  = 0xd10023fd // SUB X29, SP, #8
			noneYet   = ^uint32(0)
			instrSize = 4
		)
		word := func(pc uint32) uint32 {
			if int(pc)+instrSize > len(code) {
				return 0
			}
			return binary.LittleEndian.Uint32(code[pc:])
		}
		// An injected call (asyncPreempt, debugCallV2) is entered with
		// SP 16 bytes below the interrupted frame's SP, where the
		// injector saved the interrupted LR; the function stores its
		// frame record by hand before moving SP, and its epilogue pops
		// the extra 16 bytes too.
		var adj int32
		name := ldr.SymName(s)
		injected := name == "runtime.asyncPreempt" || name == "runtime.debugCallV2"
		if injected {
			adj = 16
		}
		var frame int32
		raSaved, fpSaved, fpReady := noneYet, noneYet, noneYet
		for i, sp := range spans {
			if sp.d == 0 {
				continue
			}
			if i > 0 && spans[i-1].d == 0 && sp.pc >= instrSize {
				prev := word(sp.pc - instrSize)
				switch {
				case injected:
					raSaved, fpSaved = sp.pc, sp.pc
					if word(sp.pc) == sturFP {
						fpSaved = sp.pc + instrSize
					}
				case prev&0xffe00fff == strLRPre:
					raSaved = sp.pc
					if word(sp.pc) == sturFP {
						fpSaved = sp.pc + instrSize
					}
				case prev == movSPR20:
					raSaved, fpSaved = sp.pc, sp.pc
				}
				if fpSaved != noneYet && word(fpSaved) == subFPSP8 {
					fpReady = fpSaved + instrSize
				}
				frame = sp.d + adj
			}
			break
		}
		hasRecord := raSaved != noneYet
		if spwrite && !hasRecord {
			return append(rows, sframeRow{undefined: true})
		}
		if !hasRecord && frame > 0 {
			if pairRows, ok := sframePairRows(rows, spans, word); ok {
				return pairRows
			}
		}
		for _, sp := range spans {
			r := sframeRow{off: sp.pc, cfa: sp.d + adj}
			if hasRecord && sp.d > 0 && sp.pc >= raSaved {
				r.ra = -frame
			}
			// The FP store may fall inside this span: split it.
			if r.ra != 0 && fpSaved != noneYet && sp.pc < fpSaved && fpSaved < sp.next {
				add(r)
				r.off = fpSaved
			}
			if r.ra != 0 && fpSaved != noneYet && r.off >= fpSaved {
				r.fp = -frame - 8
			}
			if !(spwrite && r.fp != 0) || sp.next <= fpReady {
				add(r)
				continue
			}
			if r.off < fpReady {
				add(r)
			}
			add(sframeRow{off: max(r.off, fpReady), baseFP: true, cfa: frame + 8, ra: -frame, fp: -frame - 8})
			// The epilogue reloads R29 before it pops the frame:
			// from there on the CFA is SP-based again.
			for pc := max(r.off, fpReady); pc < sp.next; pc += instrSize {
				if w := word(pc); w == ldurFP || w == ldpFPLR {
					r.off = pc + instrSize
					if r.off < sp.next {
						add(r)
					}
					break
				}
			}
		}
		rows = sframeRegReturns(rows, code, uint32(len(code)))
	}
	return rows
}

// sframeRegReturns marks outermost each arm64 RET through a register
// other than LR (asyncPreempt's RET (R27)): the return address is in a
// register the default descriptor cannot name, and a rule naming LR
// would skip the frame LR belongs to. rows must be sorted by offset.
func sframeRegReturns(rows []sframeRow, code []byte, size uint32) []sframeRow {
	const (
		retMask = 0xfffffc1f // RET Xn: 0xd65f0000 | n<<5
		ret     = 0xd65f0000
		retLR   = 0xd65f03c0
	)
	for pc := uint32(0); pc+4 <= size; pc += 4 {
		w := binary.LittleEndian.Uint32(code[pc:])
		if w&retMask != ret || w == retLR {
			continue
		}
		// i: the first row at or after pc; j: the first after pc.
		i, _ := slices.BinarySearchFunc(rows, pc, func(r sframeRow, pc uint32) int { return int(r.off) - int(pc) })
		j := i
		if j < len(rows) && rows[j].off == pc {
			j++
		}
		tail := []sframeRow{{off: pc, undefined: true}}
		if pc+4 < size && (j == len(rows) || rows[j].off > pc+4) && j > 0 {
			// The rule in effect at pc resumes after the RET.
			cur := rows[j-1]
			cur.off = pc + 4
			tail = append(tail, cur)
		}
		tail = append(tail, rows[j:]...)
		rows = append(rows[:i], tail...)
	}
	return rows
}

// sframePairRows returns the rows of an arm64 assembly function that
// allocates its frame with SUB $n, RSP (NOFRAME) and saves the frame
// record later with STP (R29, R30), off(RSP), as crosscall2 does: LR holds
// the return address until the STP and again after the matching LDP, the
// saved pair is at CFA-(d-off) (FP) and CFA-(d-off-8) (LR) in between. ok
// is false for a function without such a pair.
func sframePairRows(rows []sframeRow, spans []sframeSpan, word func(uint32) uint32) ([]sframeRow, bool) {
	const (
		stpFPLRSP = 0xa9007bfd // STP X29, X30, [SP, #imm]; mask 0xffc07fff
		ldpFPLRSP = 0xa9407bfd // LDP X29, X30, [SP, #imm]
		pairMask  = 0xffc07fff
	)
	imm := func(w uint32) int32 { return int32(w<<10) >> 25 * 8 } // signed imm7, scaled
	var stp, ldp uint32
	var ra int32
	for _, sp := range spans {
		for pc := sp.pc; pc < sp.next && sp.d > 0; pc += 4 {
			w := word(pc)
			switch {
			case stp == 0 && w&pairMask == stpFPLRSP:
				stp, ra = pc+4, -(sp.d - imm(w) - 8)
			case stp != 0 && ldp == 0 && w&pairMask == ldpFPLRSP:
				ldp = pc + 4
			}
		}
	}
	if stp == 0 || ldp == 0 {
		return nil, false
	}
	for _, sp := range spans {
		// Split each span at the STP and the LDP.
		for _, cut := range []uint32{sp.pc, stp, ldp} {
			if cut < sp.pc || cut >= sp.next {
				continue
			}
			r := sframeRow{off: cut, cfa: sp.d}
			if cut >= stp && cut < ldp {
				r.ra, r.fp = ra, ra-8
			}
			if n := len(rows); n > 0 && rows[n-1].sameRule(r) {
				continue
			}
			rows = append(rows, r)
		}
	}
	return rows, true
}

// sframeElfHeaders gives the .sframe section its ELF type and adds the
// PT_GNU_SFRAME program header that points at it.
func sframeElfHeaders(ctxt *Link) {
	if ctxt.IsExternal() {
		return // the system linker's (sframe_hostlink.go)
	}
	for _, seg := range []*sym.Segment{&Segtext, &Segrodata, &Segrelrodata} {
		for _, sect := range seg.Sections {
			sframeElfHeader(sect)
		}
	}
}

func sframeElfHeader(sect *sym.Section) {
	if sect.Name != ".sframe" || sect.Elfsect == nil {
		return
	}
	sh := sect.Elfsect.(*ElfShdr)
	sh.Type = shtGNUSframe
	ph := newElfPhdr()
	ph.Type = ptGNUSframe
	ph.Flags = elf.PF_R
	phsh(ph, sh)
}
