package gobin

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// The loaded image: PT_LOAD segments, the data regions scanned for the
// pclntab and the module data, and the relative relocations of a
// position-independent executable.

type seg struct {
	vaddr, filesz, memsz, off uint64
	flags                     elf.ProgFlag
}

// loadSegments keeps the PT_LOAD segments that make sense: no address
// overflows and file contents inside the file.
func (b *Binary) loadSegments() {
	for _, p := range b.ELF.Progs {
		if p.Type != elf.PT_LOAD || p.Vaddr+p.Memsz < p.Vaddr {
			continue
		}
		s := seg{p.Vaddr, min(p.Filesz, p.Memsz), p.Memsz, p.Off, p.Flags}
		if s.off > uint64(b.size) || s.filesz > uint64(b.size)-s.off {
			continue
		}
		b.segs = append(b.segs, s)
	}
}

func (b *Binary) segFor(addr uint64) *seg {
	for i := range b.segs {
		s := &b.segs[i]
		if addr >= s.vaddr && addr-s.vaddr < s.memsz {
			return s
		}
	}
	return nil
}

// ReadVA reads link-time virtual memory backed by the file into p. Bytes in
// a segment's zero-filled tail read as zero.
func (b *Binary) ReadVA(addr uint64, p []byte) error {
	for len(p) > 0 {
		s := b.segFor(addr)
		if s == nil {
			return fmt.Errorf("address %#x not in any loadable segment of %s", addr, b.Path)
		}
		rel := addr - s.vaddr
		n := min(uint64(len(p)), s.memsz-rel)
		q := p[:n]
		if rel < s.filesz {
			fn := min(n, s.filesz-rel)
			if _, err := b.r.ReadAt(q[:fn], int64(s.off+rel)); err != nil {
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

// Read returns the n bytes at link-time address addr, which must lie in the
// file-backed part of one segment (so n is at most the file's size).
func (b *Binary) Read(addr, n uint64) ([]byte, error) {
	s := b.segFor(addr)
	if s == nil || addr-s.vaddr > s.filesz || n > s.filesz-(addr-s.vaddr) {
		return nil, fmt.Errorf("address %#x+%d not in a loaded segment", addr, n)
	}
	buf := make([]byte, n)
	if _, err := b.r.ReadAt(buf, int64(s.off+addr-s.vaddr)); err != nil {
		return nil, fmt.Errorf("%s: reading %#x: %v", b.Path, addr, err)
	}
	return buf, nil
}

// FileBacked reports whether link-time address addr lies in the file-backed
// part of a loadable segment (so a core file may omit it).
func (b *Binary) FileBacked(addr uint64) bool {
	s := b.segFor(addr)
	return s != nil && addr-s.vaddr < s.filesz
}

// CodeAddr converts off, an offset in the file inside an executable segment
// (as perf reports addresses in a DSO), to its link-time address.
func (b *Binary) CodeAddr(off uint64) (uint64, bool) {
	for _, s := range b.segs {
		if s.flags&elf.PF_X != 0 && off >= s.off && off-s.off < s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// A region is loaded data: an allocated section, or a PT_LOAD segment when
// the file has no section headers.
type region struct {
	name        string // section name, "" for a segment
	addr        uint64
	data        []byte
	write, exec bool
}

// regions returns the loaded data, read once. The total read is bounded by
// a few times the file's size, however many sections claim the same bytes.
func (b *Binary) regions() []region {
	if b.regs != nil {
		return b.regs
	}
	budget := 4 * uint64(b.size)
	take := func(n uint64) bool {
		if n > budget {
			return false
		}
		budget -= n
		return true
	}
	for _, s := range b.ELF.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_COMPRESSED != 0 || !take(s.Size) {
			continue
		}
		if data, err := s.Data(); err == nil {
			b.regs = append(b.regs, region{s.Name, s.Addr, data, s.Flags&elf.SHF_WRITE != 0, s.Flags&elf.SHF_EXECINSTR != 0})
		}
	}
	if len(b.ELF.Sections) <= 1 {
		for _, s := range b.segs {
			if !take(s.filesz) {
				continue
			}
			data := make([]byte, s.filesz)
			if _, err := b.r.ReadAt(data, int64(s.off)); err == nil {
				b.regs = append(b.regs, region{"", s.vaddr, data, s.flags&elf.PF_W != 0, s.flags&elf.PF_X != 0})
			}
		}
	}
	if b.regs == nil {
		b.regs = []region{}
	}
	return b.regs
}

// dataRegions are the regions the module data can be in: writable data,
// and .data.rel.ro (where a position-independent executable keeps it). With
// section headers only those sections are read, not the whole image (the
// code and read-only data are most of it, and a reader that opens a
// binary once pays for every page it reads); without them, every loaded
// segment is (regions).
func (b *Binary) dataRegions() []region {
	if b.regs != nil || len(b.ELF.Sections) <= 1 {
		var out []region
		for _, r := range b.regions() {
			if r.write || r.name == ".data.rel.ro" {
				out = append(out, r)
			}
		}
		return out
	}
	var out []region
	budget := 4 * uint64(b.size)
	for _, s := range b.ELF.Sections {
		write := s.Flags&elf.SHF_WRITE != 0
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_COMPRESSED != 0 ||
			!write && s.Name != ".data.rel.ro" || s.Size > budget {
			continue
		}
		budget -= s.Size
		if data, err := s.Data(); err == nil {
			out = append(out, region{s.Name, s.Addr, data, write, s.Flags&elf.SHF_EXECINSTR != 0})
		}
	}
	return out
}

// find returns the offset of the first 8-byte aligned occurrence of pat in
// r for whose data from there on ok holds, or -1.
func (r *region) find(pat []byte, ok func([]byte) bool) int {
	for i := 0; i < len(r.data); {
		j := bytes.Index(r.data[i:], pat)
		if j < 0 {
			break
		}
		off := i + j
		if (r.addr+uint64(off))%8 == 0 && ok(r.data[off:]) {
			return off
		}
		i = off + 1
	}
	return -1
}

// A relocation is one R_*_RELATIVE relocation: the word at off holds the
// link-time address addend once loaded.
type relocation struct{ off, addend uint64 }

const relaSize = 24 // sizeof(Elf64_Rela)

// relocations returns the relative relocations of a position-independent
// executable, from .rela.dyn or, without section headers, from the dynamic
// segment's DT_RELA and DT_RELASZ.
func (b *Binary) relocations() []relocation {
	if !b.PIE {
		return nil
	}
	var data []byte
	if s := b.ELF.Section(".rela.dyn"); s != nil {
		data, _ = s.Data()
	} else {
		data = b.dynamicRela()
	}
	relative := uint32(elf.R_X86_64_RELATIVE)
	if b.Arch == "arm64" {
		relative = uint32(elf.R_AARCH64_RELATIVE)
	}
	var out []relocation
	for i := 0; i+relaSize <= len(data); i += relaSize {
		if uint32(b.word(data[i+8:])) == relative {
			out = append(out, relocation{b.word(data[i:]), b.word(data[i+16:])})
		}
	}
	return out
}

// dynamicRela reads the DT_RELA table through the PT_DYNAMIC segment.
func (b *Binary) dynamicRela() []byte {
	for _, p := range b.ELF.Progs {
		if p.Type != elf.PT_DYNAMIC || p.Filesz > uint64(b.size) {
			continue
		}
		dyn := make([]byte, p.Filesz)
		if _, err := p.ReadAt(dyn, 0); err != nil {
			return nil
		}
		var rela, relasz uint64
		for i := 0; i+16 <= len(dyn); i += 16 {
			switch elf.DynTag(b.word(dyn[i:])) {
			case elf.DT_RELA:
				rela = b.word(dyn[i+8:])
			case elf.DT_RELASZ:
				relasz = b.word(dyn[i+8:])
			}
		}
		data, err := b.Read(rela, relasz)
		if err != nil {
			return nil
		}
		return data
	}
	return nil
}

// applyRelocs patches relocations into buf, the file contents at link-time
// address addr, so that PIE pointers read as link-time addresses.
func (b *Binary) applyRelocs(rels []relocation, addr uint64, buf []byte) {
	for _, r := range rels {
		if r.off >= addr && r.off-addr <= uint64(len(buf)) && uint64(len(buf))-(r.off-addr) >= 8 {
			b.Order.PutUint64(buf[r.off-addr:], r.addend)
		}
	}
}
