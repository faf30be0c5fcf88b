package gobin

import (
	"debug/elf"
	"sort"
)

// The pclntab header (runtime.pcHeader, go1.20 and later, 64-bit): magic,
// two zero pads, the PC quantum, the pointer size, then words.
const (
	go120Magic     = 0xfffffff1
	hdrPad1        = 4
	hdrPad2        = 5
	hdrMinLC       = 6
	hdrPtrSize     = 7
	hdrNfunc       = 8
	hdrFuncnameOff = hdrNfunc + 3*8 // after nfunc, nfiles and an unused word
	hdrCuOff       = hdrFuncnameOff + 8
	hdrFiletabOff  = hdrCuOff + 8
	hdrPctabOff    = hdrFiletabOff + 8
	hdrPclnOff     = hdrPctabOff + 8
	hdrSize        = hdrPclnOff + 8

	// maxFuncs bounds nfunc (the Go toolchain itself has about 2^16).
	maxFuncs = 1 << 24
	// functabSize is one functab entry: entryoff, funcoff (uint32 each).
	functabSize = 8
)

// pclntabSections are the names the linker gives the pclntab's section.
var pclntabSections = []string{".gopclntab", ".data.rel.ro.gopclntab"}

func (b *Binary) findPclntab() error {
	for _, name := range pclntabSections {
		s := b.ELF.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			// The runtime maps the pclntab as is; a compressed one is
			// damage, and decompressing it could take any amount of memory.
			return openError(b.Path, ErrBadELF, "section %s is marked compressed", name)
		}
		if b.mapped != nil && s.Offset <= uint64(len(b.mapped)) && s.Size <= uint64(len(b.mapped))-s.Offset {
			return b.parseHeader(b.mapped[s.Offset:s.Offset+s.Size:s.Offset+s.Size], s.Addr)
		}
		d, err := s.Data()
		if err != nil {
			return openError(b.Path, ErrBadELF, "reading section %s: %v", name, err)
		}
		return b.parseHeader(d, s.Addr)
	}
	if addr, ok := b.symbol("runtime.pclntab"); ok {
		for _, r := range b.regions() {
			if addr >= r.addr && addr-r.addr < uint64(len(r.data)) {
				return b.parseHeader(r.data[addr-r.addr:], addr)
			}
		}
	}
	if d, addr := b.scanPclntab(); d != nil {
		return b.parseHeader(d, addr)
	}
	return openError(b.Path, ErrNoPclntab, "no .gopclntab section, runtime.pclntab symbol or pclntab header in its data")
}

// scanPclntab looks for a valid pclntab header, 8-byte aligned, in loaded
// data that is not code.
func (b *Binary) scanPclntab() ([]byte, uint64) {
	var magic [4]byte
	b.Order.PutUint32(magic[:], go120Magic)
	for _, r := range b.regions() {
		if r.exec {
			continue
		}
		if off := r.find(magic[:], func(d []byte) bool { return b.checkHeader(d) == "" }); off >= 0 {
			return r.data[off:], r.addr + uint64(off)
		}
	}
	return nil, 0
}

// checkHeader says what is wrong with the pclntab header at the start of d,
// or "" if nothing is.
func (b *Binary) checkHeader(d []byte) string {
	if len(d) < hdrSize {
		return "header truncated"
	}
	if d[hdrPad1] != 0 || d[hdrPad2] != 0 || uint64(d[hdrMinLC]) != b.Quantum || int(d[hdrPtrSize]) != b.PtrSize {
		return "header does not match the ELF file's architecture"
	}
	if n := b.word(d[hdrNfunc:]); n == 0 || n > maxFuncs {
		return "implausible function count"
	}
	for _, off := range []int{hdrFuncnameOff, hdrCuOff, hdrFiletabOff, hdrPctabOff, hdrPclnOff} {
		if o := b.word(d[off:]); o < hdrSize || o >= uint64(len(d)) {
			return "table offset outside the pclntab"
		}
	}
	return ""
}

// parseHeader checks the pclntab header at the start of d, at link-time
// address addr, and slices out its tables.
func (b *Binary) parseHeader(d []byte, addr uint64) error {
	if len(d) < 4 || b.Order.Uint32(d) != go120Magic {
		var m uint32
		if len(d) >= 4 {
			m = b.Order.Uint32(d)
		}
		return openError(b.Path, ErrUnsupported, "pclntab version (magic %#x; Go 1.20 and later are read)", m)
	}
	if why := b.checkHeader(d); why != "" {
		return openError(b.Path, ErrCorrupt, "at %#x: %s", addr, why)
	}
	b.tab, b.PclntabAddr = d, addr
	b.nfunc = int(b.word(d[hdrNfunc:]))
	offs := []uint64{b.word(d[hdrFuncnameOff:]), b.word(d[hdrCuOff:]), b.word(d[hdrFiletabOff:]), b.word(d[hdrPctabOff:]), b.word(d[hdrPclnOff:])}
	// Each table runs to the next one, or to the end.
	ends := append(append([]uint64(nil), offs...), uint64(len(d)))
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	table := func(start uint64) []byte {
		end := uint64(len(d))
		for _, e := range ends {
			if e > start {
				end = e
				break
			}
		}
		return d[start:end]
	}
	b.funcnames, b.cutab, b.filetab, b.pctab = table(offs[0]), table(offs[1]), table(offs[2]), table(offs[3])
	b.pcln = d[offs[4]:]
	if uint64(len(b.pcln))/functabSize < uint64(b.nfunc)+1 {
		return openError(b.Path, ErrCorrupt, "function table truncated (%d functions claimed)", b.nfunc)
	}
	return nil
}

// loadFuncs reads the function table, checking every record it indexes.
func (b *Binary) loadFuncs() error {
	entry := func(i int) uint64 { return uint64(b.Order.Uint32(b.pcln[i*functabSize:])) }
	if b.Text > ^uint64(0)-1<<32 {
		return openError(b.Path, ErrCorrupt, "text address %#x overflows", b.Text)
	}
	b.Funcs = make([]Func, b.nfunc)
	b.byName = make(map[string]*Func, b.nfunc)
	for i := range b.Funcs {
		start, end := entry(i), entry(i+1)
		foff := b.Order.Uint32(b.pcln[i*functabSize+4:])
		if uint64(foff) > uint64(len(b.pcln)) || uint64(len(b.pcln))-uint64(foff) < funcSize {
			return openError(b.Path, ErrCorrupt, "function %d: record at %#x outside the function table", i, foff)
		}
		rec := b.pcln[foff:]
		if end < start {
			return openError(b.Path, ErrCorrupt, "function %d ends at text+%#x, before its entry text+%#x", i, end, start)
		}
		if uint64(b.Order.Uint32(rec[fEntryOff:])) != start {
			return openError(b.Path, ErrCorrupt, "function %d: record says entry text+%#x, table says text+%#x", i, b.Order.Uint32(rec[fEntryOff:]), start)
		}
		name, ok := cstring(b.funcnames, uint64(b.Order.Uint32(rec[fNameOff:])))
		if !ok {
			return openError(b.Path, ErrCorrupt, "function %d: name offset %#x outside the name table", i, b.Order.Uint32(rec[fNameOff:]))
		}
		f := &b.Funcs[i]
		*f = Func{Name: name, Entry: b.Text + start, End: b.Text + end, FuncID: rec[fFuncID], Flag: rec[fFlag], off: foff, b: b}
		if _, dup := b.byName[name]; !dup {
			b.byName[name] = f
		}
	}
	return nil
}
