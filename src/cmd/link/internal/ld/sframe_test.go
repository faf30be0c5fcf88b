// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ld

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const sframeTestProg = `
package main

import (
	"fmt"
	"os"
)

//go:noinline
func leaf(x int) int { return x*3 + 1 }

//go:noinline
func big(n int) int {
	var a [512]int
	for i := range a {
		a[i] = leaf(i + n)
	}
	return a[n%len(a)]
}

func main() {
	done := make(chan int)
	go func() { done <- big(len(os.Args)) }()
	fmt.Println(<-done)
}
`

// sframeFDE is one decoded function descriptor and its rows, read by
// the test's own decoder of the SFrame v3 layout.
type sframeFDE struct {
	start, size uint64
	info        byte
	rows        []sframeTestRow
	attrOff     uint32 // offset of its attributes in the FRE sub-section
	enc         []byte // its attributes and rows as encoded
}

type sframeTestRow struct {
	off    uint32
	baseSP bool
	words  []int32
}

func buildSframeTestProg(t *testing.T, goarch string, ldflags string, env ...string) *elf.File {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.go")
	prog := sframeTestProg
	if slices.Contains(env, "CGO_ENABLED=1") {
		// A cgo program: the system linker links it.
		prog = strings.Replace(prog, "import (", "// static int twice(int x) { return 2*x; }\nimport \"C\"\n\nimport (", 1)
		prog = strings.Replace(prog, "big(len(os.Args))", "big(int(C.twice(C.int(len(os.Args)))))", 1)
	}
	if err := os.WriteFile(src, []byte(prog), 0666); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	cmd := testenv.Command(t, testenv.GoToolPath(t), "build", "-ldflags="+ldflags, "-o", bin, src)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v:\n%s", cmd.Args, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// decodeSframe decodes a .sframe section loaded at addr.
func decodeSframe(d []byte, addr uint64) (hdr []byte, fdes []sframeFDE, err error) {
	le := binary.LittleEndian
	if len(d) < sframeHeaderSize {
		return nil, nil, fmt.Errorf("section of %d bytes is shorter than the header", len(d))
	}
	nfdes, nfres, frelen := le.Uint32(d[8:]), le.Uint32(d[12:]), le.Uint32(d[16:])
	hlen := sframeHeaderSize + int(d[7])
	idx := d[hlen+int(le.Uint32(d[20:])):]
	fres := d[hlen+int(le.Uint32(d[24:])):]
	if uint64(len(fres)) != uint64(frelen) || uint64(len(idx)) < uint64(nfdes)*sframeIndexSize+uint64(frelen) {
		return nil, nil, fmt.Errorf("FRE length %d does not match the section (%d bytes left)", frelen, len(fres))
	}
	total := 0
	for i := range int(nfdes) {
		e := idx[i*sframeIndexSize:]
		field := addr + uint64(len(d)-len(e))
		fde := sframeFDE{
			start: field + le.Uint64(e[0:]),
			size:  uint64(le.Uint32(e[8:])),
		}
		fde.attrOff = le.Uint32(e[12:])
		p := fres[fde.attrOff:]
		n := int(le.Uint16(p))
		fde.info = p[2]
		// The default FDE type; a repetition size only for a PC-mask
		// FDE (a PLT's, in a host-linked binary).
		if p[3] != 0 || (p[4] != 0) != (fde.info&sframePCMask != 0) {
			return nil, nil, fmt.Errorf("FDE %d: FDE type %d, info %#x, rep size %d", i, p[3], fde.info, p[4])
		}
		p = p[sframeAttrSize:]
		addrSize := [...]int{1, 2, 4, 0}[fde.info&0xf]
		for range n {
			var r sframeTestRow
			switch addrSize {
			case 1:
				r.off = uint32(p[0])
			case 2:
				r.off = uint32(le.Uint16(p))
			case 4:
				r.off = le.Uint32(p)
			default:
				return nil, nil, fmt.Errorf("FDE %d: bad FRE type %d", i, fde.info&0xf)
			}
			info := p[addrSize]
			p = p[addrSize+1:]
			r.baseSP = info&1 == 1
			w := [...]int{1, 2, 4, 0}[info>>5&3]
			for range int(info >> 1 & 0xf) {
				switch w {
				case 1:
					r.words = append(r.words, int32(int8(p[0])))
				case 2:
					r.words = append(r.words, int32(int16(le.Uint16(p))))
				case 4:
					r.words = append(r.words, int32(le.Uint32(p)))
				}
				p = p[w:]
			}
			fde.rows = append(fde.rows, r)
		}
		fde.enc = fres[fde.attrOff : len(fres)-len(p)]
		total += n
		fdes = append(fdes, fde)
	}
	if total != int(nfres) {
		return nil, nil, fmt.Errorf("header counts %d FREs, FDEs hold %d", nfres, total)
	}
	return d[:hlen], fdes, nil
}

func TestSframe(t *testing.T) {
	testenv.MustHaveGoBuild(t)
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			t.Parallel()
			f := buildSframeTestProg(t, goarch, "")
			checkSframe(t, f, goarch, false)
			checkSframeShared(t, f)

			off := buildSframeTestProg(t, goarch, "-sframe=false")
			if off.Section(".sframe") != nil {
				t.Errorf("-sframe=false: binary has a .sframe section")
			}
			for _, p := range off.Progs {
				if p.Type == ptGNUSframe {
					t.Errorf("-sframe=false: binary has a PT_GNU_SFRAME header")
				}
			}
		})
	}
}

// TestSframeHostlink checks the table carried through an external link
// by GNU ld 2.40 (sframe_hostlink.go), for each architecture whose C
// cross-compiler is installed.
func TestSframeHostlink(t *testing.T) {
	testenv.MustHaveGoBuild(t)
	testenv.MustHaveCGO(t)
	for _, c := range []struct{ goarch, cc string }{{"amd64", "gcc"}, {"arm64", "aarch64-linux-gnu-gcc"}} {
		t.Run(c.goarch, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(c.cc); err != nil {
				t.Skipf("skipping: %s not installed", c.cc)
			}
			out, _ := exec.Command(c.cc, "-Wl,--version").CombinedOutput()
			if !regexp.MustCompile(`(?m)^GNU ld .* 2\.40$`).Match(out) {
				t.Skipf("skipping: the system linker is not GNU ld 2.40")
			}
			env := []string{"CGO_ENABLED=1", "CC=" + c.cc}
			ext := buildSframeTestProg(t, c.goarch, "-linkmode=external", env...)
			checkSframe(t, ext, c.goarch, true)
			checkSframeShared(t, ext)
			pie := buildSframeTestProg(t, c.goarch, "-linkmode=external -s", append(env, "GOFLAGS=-buildmode=pie")...)
			if pie.Section(".sframe") == nil || pie.Section(".sframe").Type != shtGNUSframe {
				t.Errorf("PIE: no SHT_GNU_SFRAME .sframe section")
			}

			// A c-shared library's entry saves the host's frame
			// pointer at CFA-16 with MOVQ, then clears the register.
			if c.goarch == "amd64" {
				lib := buildSframeTestProg(t, c.goarch, "", append(env, "GOFLAGS=-buildmode=c-shared")...)
				checkSframeRt0Lib(t, lib)
			}

			off := buildSframeTestProg(t, c.goarch, "-linkmode=external -sframe=false", env...)
			for _, p := range off.Progs {
				if p.Type == ptGNUSframe {
					t.Errorf("-sframe=false: binary has a PT_GNU_SFRAME header")
				}
			}
		})
	}
}

// checkSframeShared checks that functions whose attributes and rows
// encode alike point at one copy of them, and that the FRE sub-section
// holds nothing but the distinct encodings.
func checkSframeShared(t *testing.T, f *elf.File) {
	t.Helper()
	hdr, fdes := readSframe(t, f.Section(".sframe"))
	at := map[string]uint32{}
	size := 0
	for _, fde := range fdes {
		off, ok := at[string(fde.enc)]
		switch {
		case !ok:
			at[string(fde.enc)] = fde.attrOff
			size += len(fde.enc)
		case off != fde.attrOff:
			t.Errorf("FDE at %#x: attributes and rows at FRE offset %#x repeat those at %#x", fde.start, fde.attrOff, off)
		}
	}
	if len(at) >= len(fdes) {
		t.Errorf("%d FDEs have %d distinct encodings: no function shares its rows", len(fdes), len(at))
	}
	if frelen := binary.LittleEndian.Uint32(hdr[16:]); int(frelen) != size {
		t.Errorf("FRE sub-section is %d bytes; its distinct encodings take %d", frelen, size)
	}
}

// readSframe decodes the section sect.
func readSframe(t *testing.T, sect *elf.Section) (hdr []byte, fdes []sframeFDE) {
	t.Helper()
	data, err := sect.Data()
	if err != nil {
		t.Fatal(err)
	}
	hdr, fdes, err = decodeSframe(data, sect.Addr)
	if err != nil {
		t.Fatal(err)
	}
	return hdr, fdes
}

// sframeFuncView returns the rows of the function [start, start+size)
// as its own FDE would hold them: those of the FDE that contains it,
// from the row in force at its entry (at offset 0) to the last before
// its end, and that FDE's start.
func sframeFuncView(fdes []sframeFDE, start, size uint64) (view sframeFDE, fdeStart uint64, ok bool) {
	i, _ := slices.BinarySearchFunc(fdes, start+1, func(fde sframeFDE, pc uint64) int { return cmp.Compare(fde.start, pc) })
	if i == 0 || start+size > fdes[i-1].start+fdes[i-1].size {
		return sframeFDE{}, 0, false
	}
	fde := fdes[i-1]
	view = sframeFDE{start: start, size: size, info: fde.info}
	for j, r := range fde.rows {
		pc := fde.start + uint64(r.off)
		if pc >= start+size || j+1 < len(fde.rows) && fde.start+uint64(fde.rows[j+1].off) <= start {
			continue
		}
		r.off = uint32(max(pc, start) - start)
		view.rows = append(view.rows, r)
	}
	return view, fde.start, true
}

// checkSframeRt0Lib checks _rt0_amd64_lib's rows in a c-shared library:
// wherever its frame is allocated, after the store of BP, the caller's
// frame pointer is at CFA-16, as the register no longer holds it.
func checkSframeRt0Lib(t *testing.T, f *elf.File) {
	sect := f.Section(".sframe")
	if sect == nil {
		t.Fatal("c-shared: no .sframe section")
	}
	_, fdes := readSframe(t, sect)
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == "_rt0_amd64_lib" })
	if i < 0 {
		t.Fatal("c-shared: no _rt0_amd64_lib symbol")
	}
	view, _, ok := sframeFuncView(fdes, syms[i].Value, syms[i].Size)
	if !ok {
		t.Fatal("c-shared: no FDE for _rt0_amd64_lib")
	}
	// Rows: the entry, the frame allocated (BP not stored yet), BP
	// saved at CFA-16 until the frame is freed, the return.
	rows := view.rows
	var saved int
	for k, r := range rows {
		if len(r.words) == 2 && r.words[1] == -16 {
			saved++
			if k == 0 || len(rows[k-1].words) != 1 || rows[k-1].words[0] != r.words[0] {
				t.Errorf("_rt0_amd64_lib: row %d %+v saves FP, not after the frame's allocation", k, r)
			}
		}
	}
	if saved != 1 || len(rows) != 4 {
		t.Errorf("_rt0_amd64_lib: rows %+v, want 4, the third with the caller's FP at CFA-16", rows)
	}
}

func checkSframe(t *testing.T, f *elf.File, goarch string, hostlinked bool) {
	sect := f.Section(".sframe")
	if sect == nil {
		t.Fatal("no .sframe section")
	}
	if sect.Type != shtGNUSframe || sect.Flags&elf.SHF_ALLOC == 0 {
		t.Errorf(".sframe has type %#x flags %v, want SHT_GNU_SFRAME, allocated", uint32(sect.Type), sect.Flags)
	}
	var ph *elf.Prog
	for _, p := range f.Progs {
		if p.Type == ptGNUSframe {
			ph = p
		}
	}
	if ph == nil {
		t.Fatal("no PT_GNU_SFRAME program header")
	}
	if ph.Vaddr != sect.Addr || ph.Memsz != sect.Size || ph.Off != sect.Offset || ph.Filesz != sect.Size {
		t.Errorf("PT_GNU_SFRAME covers [%#x,+%#x) at file offset %#x; .sframe is [%#x,+%#x) at %#x",
			ph.Vaddr, ph.Memsz, ph.Off, sect.Addr, sect.Size, sect.Offset)
	}
	loaded := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Vaddr <= sect.Addr && sect.Addr+sect.Size <= p.Vaddr+p.Filesz {
			loaded = true
		}
	}
	if !loaded {
		t.Errorf(".sframe is not inside a PT_LOAD segment")
	}

	hdr, fdes := readSframe(t, sect)
	wantABI, wantRA := byte(sframeABIAMD64LE), int8(-8)
	if goarch == "arm64" {
		wantABI, wantRA = sframeABIARM64LE, 0
	}
	if m := binary.LittleEndian.Uint16(hdr); m != sframeMagic || hdr[2] != 3 || hdr[3] != sframeFSorted|sframeFPCRel || hdr[4] != wantABI || int8(hdr[6]) != wantRA {
		t.Errorf("header: magic %#x version %d flags %#x abi %d fixed RA %d; want %#x 3 %#x %d %d",
			m, hdr[2], hdr[3], hdr[4], int8(hdr[6]), sframeMagic, sframeFSorted|sframeFPCRel, wantABI, wantRA)
	}

	for i, fde := range fdes {
		if i > 0 && fde.start < fdes[i-1].start+fdes[i-1].size {
			t.Errorf("FDE %d at %#x overlaps or precedes FDE %d at %#x+%#x", i, fde.start, i-1, fdes[i-1].start, fdes[i-1].size)
		}
		if len(fde.rows) == 0 || fde.rows[0].off != 0 {
			t.Errorf("FDE at %#x: rows do not start at the function entry", fde.start)
		}
		maxWords := 2
		if goarch == "arm64" {
			maxWords = 3
		}
		for j, r := range fde.rows {
			if uint64(r.off) >= fde.size || j > 0 && r.off <= fde.rows[j-1].off {
				t.Errorf("FDE at %#x: row %d at offset %d out of order or past the end (%d)", fde.start, j, r.off, fde.size)
			}
			if len(r.words) > maxWords || len(r.words) > 0 && r.words[0] < 0 {
				t.Errorf("FDE at %#x: row %d has words %v", fde.start, j, r.words)
			}
		}
	}

	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	// The Go text; in a host-linked binary the C code around it and the
	// PLT may have FDEs of their own.
	var goText, goEtext uint64
	for _, s := range syms {
		switch s.Name {
		case "runtime.text":
			goText = s.Value
		case "runtime.etext":
			goEtext = s.Value
		}
	}
	if goText == 0 || goEtext <= goText {
		t.Fatalf("no runtime.text/runtime.etext symbols")
	}
	var funcs []elf.Symbol
	for _, s := range syms {
		// go:textfipsstart and go:textfipsend mark a range of text; they are not functions.
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value < goText || s.Value >= goEtext || strings.HasPrefix(s.Name, "go:") {
			continue
		}
		funcs = append(funcs, s)
	}
	slices.SortFunc(funcs, func(a, b elf.Symbol) int { return cmp.Compare(a.Value, b.Value) })

	// Every Go function is covered by one FDE, which starts at its entry
	// or, when it takes in the functions after its first (sframeJoins),
	// at an earlier function's, and which ends at the end of a function.
	// named holds each function's own view: its FDE's rows over its code,
	// the first at its entry.
	named := make(map[string]sframeFDE)
	starts := make(map[uint64]bool)
	ends := make(map[uint64]bool)
	for _, s := range funcs {
		starts[s.Value], ends[s.Value+s.Size] = true, true
	}
	perFDE := make(map[uint64]int) // functions in each FDE
	for _, s := range funcs {
		view, fdeStart, ok := sframeFuncView(fdes, s.Value, s.Size)
		if !ok {
			t.Errorf("function %s [%#x, %#x) is not inside one FDE", s.Name, s.Value, s.Value+s.Size)
			continue
		}
		perFDE[fdeStart]++
		named[s.Name] = view
	}
	for _, fde := range fdes {
		if fde.start < goText || fde.start >= goEtext {
			continue
		}
		if !starts[fde.start] || !ends[fde.start+fde.size] {
			t.Errorf("FDE [%#x, %#x) does not start and end with Go functions", fde.start, fde.start+fde.size)
		}
		if n := len(fde.rows); n > sframeJoinRows && perFDE[fde.start] > 1 {
			t.Errorf("FDE at %#x: %d functions share %d rows, more than %d", fde.start, perFDE[fde.start], n, sframeJoinRows)
		}
	}
	if len(perFDE) == len(funcs) {
		t.Errorf("%d functions have %d FDEs: no FDE takes in the functions after its first", len(funcs), len(perFDE))
	}

	// The outermost frames end the walk; signal trampolines say so.
	for _, name := range []string{"runtime.goexit.abi0", "runtime.mstart.abi0", "runtime.rt0_go.abi0", "runtime.sigtramp.abi0",
		"_rt0_" + goarch + "_linux", "_rt0_" + goarch} {
		fde, ok := named[name]
		if !ok && strings.HasPrefix(name, "_rt0_") && hostlinked {
			continue // a host-linked program enters at C's _start
		}
		if !ok {
			t.Errorf("no FDE for %s", name)
			continue
		}
		for _, r := range fde.rows {
			if len(r.words) != 0 {
				t.Errorf("%s: row at %d has words %v, want RA undefined", name, r.off, r.words)
			}
		}
	}
	if fde := named["runtime.sigtramp.abi0"]; fde.info&sframeSignalBit == 0 {
		t.Errorf("runtime.sigtramp: FDE info %#x lacks the signal-frame bit", fde.info)
	}

	// Stack switches: systemstack's CFA follows the frame pointer that
	// links back to the goroutine's frames; mcall and morestack end the
	// walk, as they end the frame-pointer chain.
	fpBased := false
	for _, r := range named["runtime.systemstack.abi0"].rows {
		fpBased = fpBased || !r.baseSP
	}
	if !fpBased {
		t.Errorf("runtime.systemstack: rows %+v, want FP-based rows after the prologue", named["runtime.systemstack.abi0"].rows)
	}
	for _, name := range []string{"runtime.mcall", "runtime.morestack.abi0"} {
		if rows := named[name].rows; len(rows) != 1 || len(rows[0].words) != 0 {
			t.Errorf("%s: rows %+v, want RA undefined", name, rows)
		}
	}

	// arm64 asyncPreempt returns with RET (R27), LR holding the
	// interrupted function's LR: that one instruction is outermost.
	if goarch == "arm64" {
		fde := named["runtime.asyncPreempt.abi0"]
		var undef []uint32
		for _, r := range fde.rows {
			if len(r.words) == 0 {
				undef = append(undef, r.off)
			}
		}
		var insn [4]byte
		if len(undef) == 1 {
			if _, err := f.Section(".text").ReadAt(insn[:], int64(fde.start+uint64(undef[0])-f.Section(".text").Addr)); err != nil {
				t.Fatal(err)
			}
		}
		if len(undef) != 1 || undef[0] == 0 || binary.LittleEndian.Uint32(insn[:]) != 0xd65f0360 {
			t.Errorf("runtime.asyncPreempt: rows %+v, want one outermost row, at its RET (R27)", fde.rows)
		}
	}

	// A frameless leaf: CFA at the entry SP, RA at CFA-8 (amd64) or in LR.
	leafCFA := int32(8)
	if goarch == "arm64" {
		leafCFA = 0
	}
	if fde := named["main.leaf"]; len(fde.rows) != 1 || !fde.rows[0].baseSP || len(fde.rows[0].words) != 1 || fde.rows[0].words[0] != leafCFA {
		t.Errorf("main.leaf: rows %+v, want one SP-based row with CFA offset %d", fde.rows, leafCFA)
	}
	// A function with a frame record saves the caller's FP after the
	// prologue and restores it in the epilogue; its frame (> 4 KiB)
	// needs 2-byte words.
	fde := named["main.big"]
	saved, restored := false, false
	for _, r := range fde.rows {
		fp := len(r.words) == 2 && goarch == "amd64" && r.words[1] == -16 ||
			len(r.words) == 3 && goarch == "arm64" && r.words[2] == r.words[1]-8
		if fp {
			saved = true
		} else if saved {
			restored = true
		}
	}
	if !saved || !restored || len(fde.rows) < 4 {
		t.Errorf("main.big: rows %+v, want the FP saved after the prologue and restored in the epilogue", fde.rows)
	}
}

// sframeV1TestSection returns a version 1 section at addr as GNU ld 2.40
// writes it: a PLT-like PC-mask FDE at 0x1000, and the Go function of st
// at 0x2000 (link-time address 0x100), and that st.
func sframeV1TestSection() ([]byte, *sframeHostState) {
	le := binary.LittleEndian
	st := &sframeHostState{
		// One Go function: attributes (1 row, ADDR1) and a row CFA=SP+8.
		fres:  []byte{1, 0, sframeFREAddr1, 0, 0, 0, sframeWord1<<5 | 1<<1 | sframeBaseSP, 8},
		nfres: 1,
		funcs: []sframeHostFunc{{addr: 0x100, size: 0x40, off: 0, end: 8}},
	}
	const addr = 0x3000
	hdr := make([]byte, sframeHeaderSize)
	le.PutUint16(hdr, sframeMagic)
	hdr[2], hdr[3], hdr[4], hdr[6] = sframeVersion1, sframeFSorted, sframeABIAMD64LE, 0xf8
	fres := []byte{
		0, sframeWord1<<5 | 1<<1 | sframeBaseSP, 8, 11, sframeWord1<<5 | 1<<1 | sframeBaseSP, 16, // PLT entries
		// The Go function's carrier rows, padded.
		0, sframeWord4<<5 | 2<<1 | sframeBaseSP, 8, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff,
		1, sframeWord4<<5 | 2<<1 | sframeBaseSP, 8, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff,
	}
	var fdes []byte
	for _, f := range []struct {
		start, size, freOff, n uint32
		info                   byte
	}{{0x1000, 0x100, 0, 2, sframePCMask}, {0x2000, 0x40, 6, 2, 0}} {
		fdes = le.AppendUint32(fdes, f.start-addr)
		fdes = le.AppendUint32(fdes, f.size)
		fdes = le.AppendUint32(fdes, f.freOff)
		fdes = le.AppendUint32(fdes, f.n)
		fdes = append(fdes, f.info)
	}
	le.PutUint32(hdr[8:], 2)
	le.PutUint32(hdr[12:], 4)
	le.PutUint32(hdr[16:], uint32(len(fres)))
	le.PutUint32(hdr[24:], uint32(len(fdes)))
	return append(append(hdr, fdes...), fres...), st
}

func TestSframeV1ToV3(t *testing.T) {
	sec, st := sframeV1TestSection()
	const addr = 0x3000
	out, err := sframeV1ToV3(sec, addr, st, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > len(sec) {
		t.Errorf("version 3 table of %d bytes, carrier of %d", len(out), len(sec))
	}
	hdr, fdes, err := decodeSframe(out, addr)
	if err != nil {
		t.Fatal(err)
	}
	if hdr[2] != sframeVersion3 || hdr[3] != sframeFSorted|sframeFPCRel {
		t.Errorf("version %d flags %#x", hdr[2], hdr[3])
	}
	want := []struct {
		start, size uint64
		rows        int
		words       []int32
	}{{0x1000, 0x100, 2, []int32{8}}, {0x2000, 0x40, 1, []int32{8}}}
	if len(fdes) != len(want) {
		t.Fatalf("%d FDEs, want %d", len(fdes), len(want))
	}
	for i, w := range want {
		f := fdes[i]
		if f.start != w.start || f.size != w.size || len(f.rows) != w.rows || !slices.Equal(f.rows[0].words, w.words) {
			t.Errorf("FDE %d: %#x+%#x rows %+v; want %#x+%#x, %d rows, first %v", i, f.start, f.size, f.rows, w.start, w.size, w.rows, w.words)
		}
	}
	if fdes[0].info&sframePCMask == 0 {
		t.Errorf("PLT FDE lost its PC-mask type: info %#x", fdes[0].info)
	}

	// The Go functions must be found: a shifted copy is an error.
	st.funcs[0].size++
	if _, err := sframeV1ToV3(sec, addr, st, false); err == nil {
		t.Errorf("no error for a section without the Go functions")
	}
}

// FuzzSframeV1ToV3 feeds the rewrite arbitrary linker output: it must
// return an error, never panic.
func FuzzSframeV1ToV3(f *testing.F) {
	sec, _ := sframeV1TestSection()
	f.Add(sec)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, st := sframeV1TestSection()
		out, err := sframeV1ToV3(data, 0x3000, st, false)
		if err == nil {
			if _, _, err := decodeSframe(out, 0x3000); err != nil {
				t.Errorf("rewrite produced a table that does not decode: %v", err)
			}
		}
	})
}

// TestSframeDisable checks what a failed rewrite leaves: no program
// header, and no bytes a reader could take for a table.
func TestSframeDisable(t *testing.T) {
	testenv.MustHaveGoBuild(t)
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "prog.go"), filepath.Join(dir, "prog")
	if err := os.WriteFile(src, []byte(sframeTestProg), 0666); err != nil {
		t.Fatal(err)
	}
	cmd := testenv.Command(t, testenv.GoToolPath(t), "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v:\n%s", cmd.Args, err, out)
	}
	if err := sframeDisable(bin); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == ptGNUSframe {
			t.Errorf("PT_GNU_SFRAME left in place")
		}
	}
	data, err := f.Section(".sframe").Data()
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(data, func(b byte) bool { return b != 0 }) {
		t.Errorf(".sframe not zeroed")
	}
}
