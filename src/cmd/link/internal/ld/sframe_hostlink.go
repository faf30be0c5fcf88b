// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// This file carries the .sframe section through an external link by a
// system linker that knows only an older SFrame version.
//
// GNU ld 2.40 (Debian 12) understands SFrame version 1 only: it merges the
// .sframe sections of its inputs, adds descriptors for the PLT it builds,
// sorts the result and covers it with a PT_GNU_SFRAME program header. A
// version 3 input makes it drop the section. So for that linker the Go
// object carries a version 1 "carrier": one descriptor per Go function,
// whose start address is a 32-bit PC-relative relocation the system
// linker resolves, with version 1 rows padded so that the carrier is at
// least as large as the version 3 table (widened, and where the table has
// too few rows for that, as in a -linkshared executable that holds only
// its own packages' code, followed by spare rows). After the link, sframeHostlinked
// finds the Go functions' descriptors in the merged section (their final
// addresses are the link-time ones shifted by one delta, as the Go text
// is one input section), and rewrites the section in place as version 3:
// the Go functions' rows as computed for an internal link (sframe.go),
// the other descriptors (the PLT's, and C objects' compiled with
// -Wa,--gsframe) translated from version 1, whose row encoding version 3
// kept. The section and the program header shrink to the new size; the
// rest of the carrier's space is zeroed.
//
// Version 1 has no outermost marker and no signal-frame bit, so the
// carrier's rows are placeholders for those functions: they describe
// nothing to a reader of the carrier, which only the linker ever sees.
//
// Other system linkers (gold, lld, mold, and GNU ld versions whose SFrame
// version is not 1) get no section from Go: doc/sframe.md says what would
// be needed for each.

package ld

import (
	"bytes"
	"cmd/internal/objabi"
	"cmd/link/internal/sym"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

const (
	sframeVersion1  = 1
	sframeV1FDESize = 17 // int32 start, uint32 size, uint32 FRE offset, uint32 FRE count, info
	sframePCMask    = 1 << 4
	shtProgbits     = 1

	// sframeCarrierSlack is the room the carrier keeps for descriptors the
	// system linker adds (the PLT's) beyond the host objects' ones, which
	// sframeHostFDEs counts: each grows by 4 bytes in version 3.
	sframeCarrierSlack = 8
)

// sframeHostState is what the link keeps for the rewrite after the host
// link: the Go functions' link-time addresses and version 3 bytes.
type sframeHostState struct {
	funcs []sframeHostFunc
	fres  []byte // the Go functions' attributes and rows, as for an internal link
	nfres int
}

type sframeHostFunc struct {
	addr, size int64
	off, end   int // fres[off:end]
}

var sframeHost *sframeHostState

// sframeHostLinkerQuery returns the command that prints the external
// linker's version.
func (ctxt *Link) sframeHostLinkerQuery() *exec.Cmd {
	extld := ctxt.extld()
	args := append(extld[1:len(extld):len(extld)], trimLinkerArgv(flagExtldflags)...)
	return exec.Command(extld[0], append(args, "-Wl,--version")...)
}

// sframeHostLinkerOK runs the query and reports whether the external
// linker is one whose SFrame handling the carrier is made for: GNU ld
// 2.40.
func sframeHostLinkerOK(query *exec.Cmd) bool {
	out, err := query.CombinedOutput()
	if err != nil {
		return false
	}
	// "GNU ld (GNU Binutils for Debian) 2.40", after the compiler
	// driver's own lines.
	for line := range strings.Lines(string(out)) {
		if !strings.HasPrefix(line, "GNU ld ") {
			continue
		}
		f := strings.Fields(line)
		v := f[len(f)-1]
		return v == "2.40" || strings.HasPrefix(v, "2.40.")
	}
	return false
}

// sframeCarrier creates the version 1 carrier for an external link.
// funcs are sorted by address; fres holds their version 3 encodings.
func (ctxt *Link) sframeCarrier(funcs []sframeFunc, nfres int, fres []byte) {
	ldr := ctxt.loader
	st := &sframeHostState{fres: fres, nfres: nfres}
	textBase := int64(Segtext.Sections[0].Vaddr)
	need := sframeHeaderSize + 4*(sframeCarrierSlack+sframeHostFDEs())
	for _, f := range funcs {
		st.funcs = append(st.funcs, sframeHostFunc{addr: ldr.SymValue(f.s) - textBase, size: f.size, off: f.off, end: f.end})
		need += sframeIndexSize + f.end - f.off
	}

	// Version 1 rows: the version 3 rows with at least one data word,
	// widened where the carrier would be smaller than the table.
	type carrierRow struct {
		off   uint32
		info  byte // the base register bit
		words int
		width int
	}
	var rows [][]carrierRow
	have := sframeHeaderSize + sframeV1FDESize*len(funcs)
	for _, f := range funcs {
		var rs []carrierRow
		b := fres[f.off:f.end]
		n := int(binary.LittleEndian.Uint16(b))
		addrSize := 1 << (b[2] & 0xf)
		p := sframeAttrSize
		for range n {
			var off uint32
			switch addrSize {
			case 1:
				off = uint32(b[p])
			case 2:
				off = uint32(binary.LittleEndian.Uint16(b[p:]))
			default:
				off = binary.LittleEndian.Uint32(b[p:])
			}
			info := b[p+addrSize]
			words := int(info >> 1 & 0xf)
			width := 1 << (info >> 5 & 3)
			p += addrSize + 1 + words*width
			r := carrierRow{off: off, info: info & 1, words: max(words, 1), width: width}
			rs = append(rs, r)
			have += addrSize + 1 + r.words*r.width
		}
		rows = append(rows, rs)
	}
	for i := 0; have < need && i < len(rows); i++ {
		for j := range rows[i] {
			if have >= need {
				break
			}
			r := &rows[i][j]
			have += (4 - r.width) * r.words
			r.width = 4
		}
	}
	// A binary with few functions (a -linkshared executable holds only
	// its own packages' code) needs more room than its rows give: pad
	// the last function with rows of three 4-byte words at its last
	// row's offset. The system linker copies rows without interpreting
	// them, and the rewrite replaces them.
	if have < need && len(rows) > 0 {
		last := len(rows) - 1
		f := funcs[last]
		addrSize := 1 << (fres[f.off+2] & 0xf)
		pad := carrierRow{off: rows[last][len(rows[last])-1].off, words: 3, width: 4}
		for have < need {
			rows[last] = append(rows[last], pad)
			have += addrSize + 1 + pad.words*pad.width
		}
	}
	if have < need {
		sframeWarn("the version 1 carrier cannot hold the table (%d < %d bytes)", have, need)
		return
	}

	le := binary.LittleEndian
	var fdes, frebuf []byte
	nrows := 0
	for i, f := range funcs {
		freType := fres[f.off+2] & 0xf
		addrSize := 1 << freType
		fdes = le.AppendUint32(fdes, 0) // start: relocated below
		fdes = le.AppendUint32(fdes, uint32(f.size))
		fdes = le.AppendUint32(fdes, uint32(len(frebuf)))
		fdes = le.AppendUint32(fdes, uint32(len(rows[i])))
		fdes = append(fdes, freType)
		for _, r := range rows[i] {
			switch addrSize {
			case 1:
				frebuf = append(frebuf, byte(r.off))
			case 2:
				frebuf = le.AppendUint16(frebuf, uint16(r.off))
			default:
				frebuf = le.AppendUint32(frebuf, r.off)
			}
			wcode := byte(r.width >> 1) // 1, 2, 4 bytes: sframeWord1, 2, 4
			frebuf = append(frebuf, wcode<<5|byte(r.words)<<1|r.info)
			frebuf = append(frebuf, make([]byte, r.words*r.width)...)
			nrows++
		}
	}
	var hdr [sframeHeaderSize]byte
	sframePutHeader(hdr[:], sframeVersion1, sframeFSorted, ctxt.IsARM64(), len(funcs), nrows, len(frebuf), len(fdes))

	sb := ldr.CreateSymForUpdate(".sframe", 0)
	sb.SetType(sym.SELFROSECT)
	sb.SetAlign(8)
	sb.AddBytes(hdr[:])
	sb.AddBytes(fdes)
	sb.AddBytes(frebuf)
	for i, f := range funcs {
		// In an object file, version 1 start addresses are relative
		// to the field itself. (The linker makes R_PCREL relative to
		// the end of the field; the addend undoes that.)
		r, _ := sb.AddRel(objabi.R_PCREL)
		r.SetOff(int32(sframeHeaderSize + sframeV1FDESize*i))
		r.SetSiz(4)
		r.SetSym(f.s)
		r.SetAdd(4)
	}
	ldr.SetAttrReachable(sb.Sym(), true)
	ldr.SetAttrLocal(sb.Sym(), true)
	sframeHost = st
}

// sframeHostFDEs counts the function descriptors in the host objects'
// .sframe sections, for which the carrier keeps room.
func sframeHostFDEs() int {
	n := 0
	for _, h := range hostobj {
		f, err := os.Open(h.file)
		if err != nil {
			continue
		}
		if ef, err := elf.NewFile(io.NewSectionReader(f, h.off, h.length)); err == nil {
			if s := ef.Section(".sframe"); s != nil {
				var hdr [sframeHeaderSize]byte
				if _, err := s.ReadAt(hdr[:], 0); err == nil {
					n += int(binary.LittleEndian.Uint32(hdr[8:]))
				}
			}
		}
		f.Close()
	}
	return n
}

// sframeHostlinked rewrites the host-linked output's version 1 .sframe
// as version 3.
func (ctxt *Link) sframeHostlinked() {
	if sframeHost == nil {
		return
	}
	if err := sframeRewrite(*flagOutfile, sframeHost, ctxt.IsARM64()); err != nil {
		// The carrier's placeholder rows must not reach a reader.
		// Linking with other flags (a linker script, LTO) is no reason
		// to fail the build: say so and leave the table out.
		sframeWarn("%v", err)
		if err := sframeDisable(*flagOutfile); err != nil {
			Exitf("sframe: %s: %v", *flagOutfile, err)
		}
	}
}

// sframeWarn prints the one warning of a link whose table is left out:
// SFrame never fails a link that would succeed without it.
func sframeWarn(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: warning: sframe: %s; the binary carries no .sframe table\n", os.Args[0], fmt.Sprintf(format, args...))
}

// sframeOutput is the linked output, open for writing, with where its
// program and section headers are.
type sframeOutput struct {
	f                *os.File
	ef               *elf.File
	phoff, phentsize int64
	shoff, shentsize int64
}

func openSframeOutput(name string) (*sframeOutput, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	ef, err := elf.NewFile(f)
	if err == nil && (ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB) {
		err = fmt.Errorf("not a little-endian ELF64 file")
	}
	var ehdr [64]byte
	if err == nil {
		_, err = f.ReadAt(ehdr[:], 0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	le := binary.LittleEndian
	return &sframeOutput{f: f, ef: ef,
		phoff: int64(le.Uint64(ehdr[32:])), phentsize: int64(le.Uint16(ehdr[54:])),
		shoff: int64(le.Uint64(ehdr[40:])), shentsize: int64(le.Uint16(ehdr[58:])),
	}, nil
}

// writePhdr writes b at offset off of program header i.
func (o *sframeOutput) writePhdr(i int, off int64, b []byte) error {
	_, err := o.f.WriteAt(b, o.phoff+int64(i)*o.phentsize+off)
	return err
}

// writeShdr writes b at offset off of section header i.
func (o *sframeOutput) writeShdr(i int, off int64, b []byte) error {
	_, err := o.f.WriteAt(b, o.shoff+int64(i)*o.shentsize+off)
	return err
}

// sframeDisable removes the carrier from the output's reach after a
// failed rewrite: its bytes are zeroed and its program header, if any,
// becomes PT_NULL.
func sframeDisable(name string) error {
	o, err := openSframeOutput(name)
	if err != nil {
		return err
	}
	defer o.f.Close()
	if s := o.ef.Section(".sframe"); s != nil && s.Type != elf.SHT_NOBITS {
		if _, err := o.f.WriteAt(make([]byte, s.Size), int64(s.Offset)); err != nil {
			return err
		}
	}
	for i, p := range o.ef.Progs {
		if p.Type == ptGNUSframe {
			if err := o.writePhdr(i, 0, []byte{0, 0, 0, 0}); err != nil {
				return err
			}
		}
	}
	return nil
}

// sframeV1FDE is one descriptor of a version 1 section: start is
// relative to the section.
type sframeV1FDE struct {
	start      int64
	size       uint32
	freOff     uint32
	nfres      uint32
	info       byte
	goFunction int // index in sframeHostState.funcs, or -1
}

func sframeRewrite(name string, st *sframeHostState, arm64 bool) error {
	o, err := openSframeOutput(name)
	if err != nil {
		return err
	}
	defer o.f.Close()
	shndx := -1
	for i, s := range o.ef.Sections {
		if s.Name == ".sframe" {
			shndx = i
		}
	}
	phndx := -1
	for i, p := range o.ef.Progs {
		if p.Type == ptGNUSframe {
			phndx = i
		}
	}
	if shndx < 0 || phndx < 0 {
		return fmt.Errorf("the system linker wrote no .sframe section or PT_GNU_SFRAME header")
	}
	sect, ph := o.ef.Sections[shndx], o.ef.Progs[phndx]
	// (GNU ld 2.40 sizes the program header a few bytes larger than the
	// section it writes; both get the new size below.)
	if sect.Type == elf.SHT_NOBITS || sect.Addr != ph.Vaddr || sect.Size > ph.Filesz {
		return fmt.Errorf("PT_GNU_SFRAME (%#x, %#x bytes) does not cover the .sframe section (%#x, %#x bytes)", ph.Vaddr, ph.Filesz, sect.Addr, sect.Size)
	}
	old, err := sect.Data()
	if err != nil {
		return err
	}
	out, err := sframeV1ToV3(old, sect.Addr, st, arm64)
	if err != nil {
		return err
	}
	if len(out) > len(old) {
		return fmt.Errorf("the version 3 table (%d bytes) does not fit the carrier (%d bytes)", len(out), len(old))
	}
	buf := make([]byte, len(old))
	copy(buf, out)
	if _, err := o.f.WriteAt(buf, int64(sect.Offset)); err != nil {
		return err
	}

	// Section header: type and size. Program header: file and memory size.
	le := binary.LittleEndian
	size := le.AppendUint64(nil, uint64(len(out)))
	for _, err := range []error{
		o.writeShdr(shndx, 4, le.AppendUint32(nil, shtGNUSframe)),
		o.writeShdr(shndx, 32, size),
		o.writePhdr(phndx, 32, size), // p_filesz
		o.writePhdr(phndx, 40, size), // p_memsz
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// sframeV1ToV3 decodes the merged version 1 section at address addr and
// encodes it as version 3.
func sframeV1ToV3(sec []byte, addr uint64, st *sframeHostState, arm64 bool) ([]byte, error) {
	le := binary.LittleEndian
	if len(sec) < sframeHeaderSize || le.Uint16(sec) != sframeMagic || sec[2] != sframeVersion1 || sec[7] != 0 {
		return nil, fmt.Errorf("the system linker's .sframe is not an SFrame version 1 section without auxiliary header")
	}
	nfdes := int(le.Uint32(sec[8:]))
	frelen := int(le.Uint32(sec[16:]))
	fdeoff, freoff := int(le.Uint32(sec[20:])), int(le.Uint32(sec[24:]))
	body := sec[sframeHeaderSize:]
	if fdeoff+nfdes*sframeV1FDESize > len(body) || freoff+frelen > len(body) || freoff > len(body) {
		return nil, fmt.Errorf("corrupt version 1 header")
	}
	fdes := make([]sframeV1FDE, nfdes)
	for i := range fdes {
		b := body[fdeoff+i*sframeV1FDESize:]
		fdes[i] = sframeV1FDE{
			start:      int64(int32(le.Uint32(b))),
			size:       le.Uint32(b[4:]),
			freOff:     le.Uint32(b[8:]),
			nfres:      le.Uint32(b[12:]),
			info:       b[16],
			goFunction: -1,
		}
		if i > 0 && fdes[i].start < fdes[i-1].start {
			return nil, fmt.Errorf("descriptors not sorted")
		}
	}
	fres := body[freoff : freoff+frelen]

	// The Go functions: one delta from their link-time addresses.
	if len(st.funcs) == 0 {
		return nil, fmt.Errorf("no Go functions")
	}
	first := st.funcs[0]
	found := false
	for i := 0; i+len(st.funcs) <= len(fdes) && !found; i++ {
		if int64(fdes[i].size) != first.size {
			continue
		}
		delta := fdes[i].start - first.addr
		ok := true
		for j, gf := range st.funcs {
			d := fdes[i+j]
			if d.start != gf.addr+delta || int64(d.size) != gf.size {
				ok = false
				break
			}
		}
		if ok {
			for j := range st.funcs {
				fdes[i+j].goFunction = j
			}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("the Go functions' descriptors are not in the merged section")
	}

	var index, v3 []byte
	nrows := 0
	shared := map[string]int{} // as in an internal link: one copy of equal attributes and rows
	for i, d := range fdes {
		var attrRows []byte
		if d.goFunction >= 0 {
			gf := st.funcs[d.goFunction]
			attrRows = st.fres[gf.off:gf.end]
			nrows += int(le.Uint16(attrRows))
		} else {
			rows, err := sframeV1Rows(fres, d)
			if err != nil {
				return nil, fmt.Errorf("descriptor %d: %v", i, err)
			}
			if d.nfres > 0xffff {
				return nil, fmt.Errorf("descriptor %d: %d rows", i, d.nfres)
			}
			repSize := byte(0)
			if d.info&sframePCMask != 0 {
				// Version 1 PC-mask descriptors are PLTs of 16-byte
				// entries on both architectures.
				repSize = 16
			}
			attrRows = le.AppendUint16(nil, uint16(d.nfres))
			attrRows = append(attrRows, d.info&0x3f, 0, repSize)
			attrRows = append(attrRows, rows...)
			nrows += int(d.nfres)
		}
		field := addr + sframeHeaderSize + uint64(sframeIndexSize*i)
		fn := addr + uint64(d.start)
		index = le.AppendUint64(index, fn-field)
		index = le.AppendUint32(index, d.size)
		off, ok := shared[string(attrRows)]
		if !ok {
			off = len(v3)
			shared[string(attrRows)] = off
			v3 = append(v3, attrRows...)
		}
		index = le.AppendUint32(index, uint32(off))
	}

	abiArch, fixedRA := byte(sframeABIAMD64LE), int8(-8)
	if arm64 {
		abiArch, fixedRA = sframeABIARM64LE, 0
	}
	if sec[4] != abiArch || int8(sec[6]) != fixedRA {
		return nil, fmt.Errorf("ABI %d, fixed RA offset %d: not this architecture's", sec[4], int8(sec[6]))
	}
	out := make([]byte, sframeHeaderSize, sframeHeaderSize+len(index)+len(v3))
	sframePutHeader(out, sframeVersion3, sframeFSorted|sframeFPCRel, arm64, len(fdes), nrows, len(v3), len(index))
	out = append(out, index...)
	out = append(out, v3...)
	return out, nil
}

// sframeV1Rows returns the encoded rows of a version 1 descriptor, whose
// encoding version 3 kept.
func sframeV1Rows(fres []byte, d sframeV1FDE) ([]byte, error) {
	addrSize := 0
	switch d.info & 0xf {
	case sframeFREAddr1:
		addrSize = 1
	case sframeFREAddr2:
		addrSize = 2
	case sframeFREAddr4:
		addrSize = 4
	default:
		return nil, fmt.Errorf("FRE type %d", d.info&0xf)
	}
	p := int(d.freOff)
	if p > len(fres) {
		return nil, fmt.Errorf("rows past the end of the section")
	}
	start := p
	for range d.nfres {
		if p+addrSize+1 > len(fres) {
			return nil, fmt.Errorf("rows past the end of the section")
		}
		info := fres[p+addrSize]
		wsize := 1 << (info >> 5 & 3)
		if info>>5&3 == 3 {
			return nil, fmt.Errorf("row data word size code 3")
		}
		p += addrSize + 1 + int(info>>1&0xf)*wsize
		if p > len(fres) {
			return nil, fmt.Errorf("rows past the end of the section")
		}
	}
	return bytes.Clone(fres[start:p]), nil
}
