// Package gobin opens a Go ELF executable and symbolizes program counters from
// its pclntab alone, so that it works on binaries stripped with -ldflags='-s -w'.
//
// The pclntab (the runtime's own PC tables) survives stripping because the
// runtime needs it. It is located by its section name (.gopclntab, or
// .data.rel.ro.gopclntab in PIE binaries), else by the runtime.pclntab symbol,
// else by scanning read-only data for its header. The module data record
// (runtime.firstmoduledata) is then found as the word in writable data that
// points at the pclntab; it supplies the text start (which the pclntab header
// no longer carries) and the go:func.* base that inline-tree
// funcdata is relative to. All addresses here are link-time addresses: callers
// subtract the load bias of a position-independent executable first.
package gobin

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// ErrNotGo is returned (wrapped) for an ELF file that carries no Go pclntab.
var ErrNotGo = errors.New("not a Go executable")

const go120Magic = 0xfffffff1

// Binary is an opened Go executable.
type Binary struct {
	Path      string
	ELF       *elf.File
	Order     binary.ByteOrder
	PtrSize   int
	Quantum   uint64 // PC quantum: 1 on amd64, 4 on arm64
	Arch      string // "amd64" or "arm64"
	GoVersion string // toolchain version from buildinfo ("" if absent)
	Entry     uint64 // ELF entry point (link-time)
	PIE       bool

	Text, Etext uint64 // moduledata.text / etext
	gofunc      uint64 // moduledata.gofunc, 0 if unknown
	PclntabAddr uint64
	ModuleData  uint64 // address of firstmoduledata, 0 if not found

	tab        []byte // pclntab from its header to its end
	nfunc      int
	funcnames  []byte
	cutab      []byte
	filetab    []byte
	pctab      []byte
	pcln       []byte // functab + _func records
	inlineSkip bool   // true when gofunc is unknown (no inline expansion)

	f    *os.File
	segs []seg
}

type seg struct {
	vaddr, filesz, memsz, off uint64
	flags                     elf.ProgFlag
}

// Open opens and indexes the executable at path.
func Open(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := newBinary(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

func newBinary(f *os.File, path string) (_ *Binary, err error) {
	defer func() {
		// A malformed ELF file must give an error, never a crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: malformed executable: %v", path, r)
		}
	}()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: not an ELF file (%v)", path, ErrNotGo, err)
	}
	b := &Binary{Path: path, ELF: ef, Order: ef.ByteOrder, f: f, Entry: ef.Entry, PIE: ef.Type == elf.ET_DYN}
	switch ef.Machine {
	case elf.EM_X86_64:
		b.Arch, b.PtrSize, b.Quantum = "amd64", 8, 1
	case elf.EM_AARCH64:
		b.Arch, b.PtrSize, b.Quantum = "arm64", 8, 4
	default:
		return nil, fmt.Errorf("%s: unsupported architecture %v", path, ef.Machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			b.segs = append(b.segs, seg{p.Vaddr, p.Filesz, p.Memsz, p.Off, p.Flags})
		}
	}
	if bi, err := buildinfo.Read(f); err == nil {
		b.GoVersion = bi.GoVersion
	}
	if err := b.findPclntab(); err != nil {
		return nil, err
	}
	if err := b.findModuledata(); err != nil {
		return nil, err
	}
	return b, nil
}

// Close releases the file.
func (b *Binary) Close() error { return b.f.Close() }

// ReadVA reads link-time virtual memory backed by the file. Bytes in a
// segment's zero-filled tail read as zero.
func (b *Binary) ReadVA(addr uint64, p []byte) error {
	for len(p) > 0 {
		s := b.segFor(addr)
		if s == nil {
			return fmt.Errorf("address %#x not in any loadable segment of %s", addr, b.Path)
		}
		n := min(uint64(len(p)), s.vaddr+s.memsz-addr)
		q := p[:n]
		if addr < s.vaddr+s.filesz {
			fn := min(n, s.vaddr+s.filesz-addr)
			if _, err := b.f.ReadAt(q[:fn], int64(s.off+addr-s.vaddr)); err != nil {
				return fmt.Errorf("%s: reading %#x: %v", b.Path, addr, err)
			}
			clear(q[fn:])
		} else {
			clear(q)
		}
		p, addr = p[n:], addr+n
	}
	return nil
}

// FileBacked reports whether link-time address addr lies in the file-backed
// part of a loadable segment (so a core file may omit it).
func (b *Binary) FileBacked(addr uint64) bool {
	s := b.segFor(addr)
	return s != nil && addr < s.vaddr+s.filesz
}

func (b *Binary) segFor(addr uint64) *seg {
	for i := range b.segs {
		s := &b.segs[i]
		if addr >= s.vaddr && addr < s.vaddr+s.memsz {
			return s
		}
	}
	return nil
}

func (b *Binary) word(p []byte) uint64 {
	if b.PtrSize == 4 {
		return uint64(b.Order.Uint32(p))
	}
	return b.Order.Uint64(p)
}

func (b *Binary) findPclntab() error {
	var data []byte
	var addr uint64
	for _, name := range []string{".gopclntab", ".data.rel.ro.gopclntab"} {
		if s := b.ELF.Section(name); s != nil && s.Type != elf.SHT_NOBITS {
			d, err := s.Data()
			if err != nil {
				return fmt.Errorf("%s: reading %s: %v", b.Path, name, err)
			}
			data, addr = d, s.Addr
			break
		}
	}
	if data == nil {
		if syms, err := b.ELF.Symbols(); err == nil {
			for _, s := range syms {
				if s.Name == "runtime.pclntab" {
					if sec := b.sectionFor(s.Value); sec != nil {
						d, err := sec.Data()
						if err == nil {
							data, addr = d[s.Value-sec.Addr:], s.Value
						}
					}
					break
				}
			}
		}
	}
	if data == nil {
		data, addr = b.scanPclntab()
	}
	if data == nil {
		return fmt.Errorf("%s: %w: no Go pclntab found", b.Path, ErrNotGo)
	}
	return b.parseHeader(data, addr)
}

func (b *Binary) sectionFor(addr uint64) *elf.Section {
	for _, s := range b.ELF.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type != elf.SHT_NOBITS && addr >= s.Addr && addr < s.Addr+s.Size {
			return s
		}
	}
	return nil
}

// scanPclntab looks for a pclntab header in non-executable allocated sections.
func (b *Binary) scanPclntab() ([]byte, uint64) {
	var magic [4]byte
	b.Order.PutUint32(magic[:], go120Magic)
	for _, s := range b.ELF.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_EXECINSTR != 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for i := 0; ; {
			j := bytes.Index(d[i:], magic[:])
			if j < 0 {
				break
			}
			off := i + j
			if off%8 == 0 && b.validHeader(d[off:]) {
				return d[off:], s.Addr + uint64(off)
			}
			i = off + 1
		}
	}
	return nil, 0
}

func (b *Binary) validHeader(d []byte) bool {
	hdr := 8 + 8*b.PtrSize
	if len(d) < hdr || d[4] != 0 || d[5] != 0 || uint64(d[6]) != b.Quantum || int(d[7]) != b.PtrSize {
		return false
	}
	nfunc := b.word(d[8:])
	if nfunc == 0 || nfunc > 1<<24 {
		return false
	}
	for i := 0; i < 5; i++ {
		off := b.word(d[8+(3+i)*b.PtrSize:])
		if off < uint64(hdr) || off >= uint64(len(d)) {
			return false
		}
	}
	return true
}

func (b *Binary) parseHeader(d []byte, addr uint64) error {
	if len(d) < 8 || b.Order.Uint32(d) != go120Magic {
		m := uint32(0)
		if len(d) >= 4 {
			m = b.Order.Uint32(d)
		}
		return fmt.Errorf("%s: unsupported pclntab version (magic %#x; this reader handles Go 1.20 and later)", b.Path, m)
	}
	if !b.validHeader(d) {
		return fmt.Errorf("%s: corrupt pclntab header", b.Path)
	}
	w := func(i int) uint64 { return b.word(d[8+i*b.PtrSize:]) }
	b.tab, b.PclntabAddr = d, addr
	b.nfunc = int(w(0))
	funcnameOff, cuOff, filetabOff, pctabOff, pclnOff := w(3), w(4), w(5), w(6), w(7)
	ends := []uint64{funcnameOff, cuOff, filetabOff, pctabOff, pclnOff, uint64(len(d))}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	end := func(start uint64) uint64 {
		for _, e := range ends {
			if e > start {
				return e
			}
		}
		return uint64(len(d))
	}
	b.funcnames = d[funcnameOff:end(funcnameOff)]
	b.cutab = d[cuOff:end(cuOff)]
	b.filetab = d[filetabOff:end(filetabOff)]
	b.pctab = d[pctabOff:end(pctabOff)]
	b.pcln = d[pclnOff:]
	if uint64(len(b.pcln)) < uint64(b.nfunc+1)*8 {
		return fmt.Errorf("%s: corrupt pclntab: function table truncated", b.Path)
	}
	return nil
}

// Moduledata field offsets (runtime/symtab.go, 64-bit), used only to find the
// text start and the go:func.* base for symbolization.
const (
	mdFuncnametab = 8
	mdFtab        = 128
	mdMinpc       = 160
	mdText        = 176
	mdEtext       = 184
	mdGofunc      = 344
	mdSize        = 360
)

func (b *Binary) findModuledata() error {
	funcnameVA := b.PclntabAddr + b.word(b.tab[8+3*b.PtrSize:])
	var md []byte
	if syms, err := b.ELF.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.firstmoduledata" {
				buf := make([]byte, mdSize)
				if b.ReadVA(s.Value, buf) == nil {
					b.applyRelocs(s.Value, buf)
					if b.word(buf) == b.PclntabAddr {
						md, b.ModuleData = buf, s.Value
					}
				}
				break
			}
		}
	}
	if md == nil {
		md, b.ModuleData = b.scanModuledata(funcnameVA)
	}
	if md == nil {
		return fmt.Errorf("%s: found a pclntab at %#x but no module data pointing at it (unsupported linker layout)", b.Path, b.PclntabAddr)
	}
	b.Text, b.Etext, b.gofunc = b.word(md[mdText:]), b.word(md[mdEtext:]), b.word(md[mdGofunc:])
	if b.Text == 0 || b.Etext <= b.Text {
		return fmt.Errorf("%s: module data at %#x has no text range", b.Path, b.ModuleData)
	}
	if b.segFor(b.gofunc) == nil {
		b.gofunc, b.inlineSkip = 0, true
	}
	return nil
}

func (b *Binary) scanModuledata(funcnameVA uint64) ([]byte, uint64) {
	var want [8]byte
	b.Order.PutUint64(want[:], b.PclntabAddr)
	for _, s := range b.ELF.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_WRITE == 0 && s.Name != ".data.rel.ro" || s.Type == elf.SHT_NOBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		b.applyRelocs(s.Addr, d)
		for i := 0; i+mdSize <= len(d); i += 8 {
			if !bytes.Equal(d[i:i+8], want[:]) {
				continue
			}
			md := d[i : i+mdSize]
			if b.word(md[mdFuncnametab:]) == funcnameVA && b.word(md[mdFtab:]) == b.PclntabAddr+uint64(len(b.tab)-len(b.pcln)) {
				return append([]byte(nil), md...), s.Addr + uint64(i)
			}
		}
	}
	return nil, 0
}

// applyRelocs patches R_*_RELATIVE relocations into buf (file contents at
// link-time address addr), so PIE pointers read as link-time addresses.
func (b *Binary) applyRelocs(addr uint64, buf []byte) {
	if !b.PIE {
		return
	}
	rel := b.ELF.Section(".rela.dyn")
	if rel == nil {
		return
	}
	d, err := rel.Data()
	if err != nil {
		return
	}
	relative := uint32(elf.R_X86_64_RELATIVE)
	if b.Arch == "arm64" {
		relative = uint32(elf.R_AARCH64_RELATIVE)
	}
	for i := 0; i+24 <= len(d); i += 24 {
		off, info, add := b.Order.Uint64(d[i:]), b.Order.Uint64(d[i+8:]), b.Order.Uint64(d[i+16:])
		if uint32(info) == relative && off >= addr && off+8 <= addr+uint64(len(buf)) {
			b.Order.PutUint64(buf[off-addr:], add)
		}
	}
}

// InlineExpansion reports whether inlined frames can be expanded.
func (b *Binary) InlineExpansion() bool { return !b.inlineSkip }
