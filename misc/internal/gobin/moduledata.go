package gobin

// Offsets in runtime.moduledata (runtime/symtab.go, go1.27, 64-bit), up to
// epclntab: a pointer or uintptr is one word, a slice three.
// TestRuntimeLayout checks them against the runtime's source.
const (
	mdWord  = 8
	mdSlice = 3 * mdWord

	mdPcHeader    = 0
	mdFuncnametab = mdPcHeader + mdWord
	mdCutab       = mdFuncnametab + mdSlice
	mdFiletab     = mdCutab + mdSlice
	mdPctab       = mdFiletab + mdSlice
	mdPclntable   = mdPctab + mdSlice
	mdFtab        = mdPclntable + mdSlice
	mdFindfunctab = mdFtab + mdSlice
	mdMinpc       = mdFindfunctab + mdWord
	mdMaxpc       = mdMinpc + mdWord
	mdText        = mdMaxpc + mdWord
	mdEtext       = mdText + mdWord
	mdNoptrdata   = mdEtext + mdWord
	// noptrdata through itabsize: 18 words of section bounds.
	mdRodata   = mdNoptrdata + 18*mdWord
	mdGofunc   = mdRodata + mdWord
	mdEpclntab = mdGofunc + mdWord
	mdPrefix   = mdEpclntab + mdWord // the bytes read
)

// findModuledata finds runtime.firstmoduledata, by symbol or by scanning
// writable data for a record whose pclntab pointers agree with the header,
// and takes the text range and go:func.* base from it. Without one (a
// linker layout not seen before) the text start comes from the runtime.text
// symbol or the .text section, and inlined frames are not expanded.
func (b *Binary) findModuledata() error {
	rels := b.relocations()
	var md []byte
	if addr, ok := b.symbol("runtime.firstmoduledata"); ok {
		buf := make([]byte, mdPrefix)
		if b.ReadVA(addr, buf) == nil {
			b.applyRelocs(rels, addr, buf)
			if b.isModuledata(buf) {
				md, b.ModuleData = buf, addr
			}
		}
	}
	if md == nil {
		md, b.ModuleData = b.scanModuledata(rels)
	}
	if md == nil {
		return b.textWithoutModuledata()
	}
	b.Text, b.Etext, b.gofunc = b.word(md[mdText:]), b.word(md[mdEtext:]), b.word(md[mdGofunc:])
	if b.Text == 0 || b.Etext <= b.Text {
		return openError(b.Path, ErrCorrupt, "module data at %#x has no text range", b.ModuleData)
	}
	if b.segFor(b.gofunc) == nil {
		b.gofunc, b.inlineSkip = 0, true
	}
	return nil
}

// isModuledata reports whether md starts a module data record for this
// pclntab: it points at the header, its name table and its function table.
func (b *Binary) isModuledata(md []byte) bool {
	return len(md) >= mdPrefix &&
		b.word(md[mdPcHeader:]) == b.PclntabAddr &&
		b.word(md[mdFuncnametab:]) == b.PclntabAddr+b.word(b.tab[hdrFuncnameOff:]) &&
		b.word(md[mdFtab:]) == b.PclntabAddr+b.word(b.tab[hdrPclnOff:])
}

func (b *Binary) scanModuledata(rels []relocation) ([]byte, uint64) {
	var want [8]byte
	b.Order.PutUint64(want[:], b.PclntabAddr)
	for _, r := range b.dataRegions() {
		b.applyRelocs(rels, r.addr, r.data)
		if off := r.find(want[:], b.isModuledata); off >= 0 {
			return append([]byte(nil), r.data[off:off+mdPrefix]...), r.addr + uint64(off)
		}
	}
	return nil, 0
}

func (b *Binary) textWithoutModuledata() error {
	b.inlineSkip = true
	if v, ok := b.symbol("runtime.text"); ok {
		b.Text = v
	} else if s := b.ELF.Section(".text"); s != nil {
		b.Text = s.Addr
	} else {
		return openError(b.Path, ErrCorrupt, "no module data points at the pclntab at %#x, and no text symbol or section says where the code starts", b.PclntabAddr)
	}
	b.Etext = b.Text + uint64(b.Order.Uint32(b.pcln[b.nfunc*functabSize:]))
	return nil
}
