// Package gobin reads the function table of a Go ELF binary from its pclntab.
//
// It needs neither DWARF nor a symbol table: the pclntab is found through the
// .gopclntab section or, failing that, by its header magic, and the start of
// the text it describes comes from the runtime's moduledata, which is found as
// the word in the data sections that points at the pclntab.
package gobin

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Function flags, as in internal/abi.FuncFlag.
const (
	FlagTopFrame = 1 << 0
	FlagSPWrite  = 1 << 1
	FlagAsm      = 1 << 2
)

// go1.20 and later pclntab magic.
const pclnMagic = 0xfffffff1

// Func is one function of the binary's pclntab.
type Func struct {
	Name       string
	Entry, End uint64
	Flag       uint8
	FuncID     uint8
}

func (f *Func) TopFrame() bool { return f.Flag&FlagTopFrame != 0 }
func (f *Func) Asm() bool      { return f.Flag&FlagAsm != 0 }

// Binary is a Go ELF binary with its function table.
type Binary struct {
	Path  string
	Arch  string // "amd64" or "arm64"
	ELF   *elf.File
	Funcs []Func // sorted by Entry
	Text  uint64 // moduledata.text

	byName map[string]*Func
}

// ErrNotGo is returned for an ELF file without a Go pclntab.
var ErrNotGo = errors.New("not a Go binary (no Go 1.20+ pclntab found)")

// Open reads path. Errors name the problem in words a user can act on.
func Open(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != elf.ELFMAG {
		f.Close()
		return nil, fmt.Errorf("%s: not an ELF file", path)
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: bad ELF file: %v", path, err)
	}
	b := &Binary{Path: path, ELF: ef}
	switch ef.Machine {
	case elf.EM_X86_64:
		b.Arch = "amd64"
	case elf.EM_AARCH64:
		b.Arch = "arm64"
	default:
		return nil, fmt.Errorf("%s: unsupported architecture %v (fpcheck handles amd64 and arm64)", path, ef.Machine)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("%s: unsupported ELF class/byte order", path)
	}
	if err := b.load(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Close releases the file.
func (b *Binary) Close() error { return b.ELF.Close() }

func (b *Binary) load() error {
	addr, tab, err := b.findPclntab()
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	if len(tab) < 8+8*8 {
		return ErrNotGo
	}
	nfunc := le.Uint64(tab[8:])
	funcnameOff := le.Uint64(tab[8+3*8:])
	pclnOff := le.Uint64(tab[8+7*8:])
	if pclnOff >= uint64(len(tab)) || funcnameOff >= uint64(len(tab)) || nfunc > uint64(len(tab))/8 {
		return fmt.Errorf("corrupt pclntab header")
	}
	pcln := tab[pclnOff:]
	names := tab[funcnameOff:]
	if uint64(len(pcln)) < (nfunc+1)*8 {
		return fmt.Errorf("corrupt pclntab function table")
	}
	b.Text = b.findText(addr)
	funcs := make([]Func, 0, nfunc)
	for i := uint64(0); i < nfunc; i++ {
		entry := le.Uint32(pcln[i*8:])
		foff := le.Uint32(pcln[i*8+4:])
		next := le.Uint32(pcln[(i+1)*8:])
		if uint64(foff)+44 > uint64(len(pcln)) {
			return fmt.Errorf("corrupt pclntab: function %d out of range", i)
		}
		fn := pcln[foff:]
		nameOff := le.Uint32(fn[4:])
		name := cstring(names, nameOff)
		funcs = append(funcs, Func{
			Name:   name,
			Entry:  b.Text + uint64(entry),
			End:    b.Text + uint64(next),
			FuncID: fn[40],
			Flag:   fn[41],
		})
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Entry < funcs[j].Entry })
	b.Funcs = funcs
	b.byName = make(map[string]*Func, len(funcs))
	for i := range b.Funcs {
		f := &b.Funcs[i]
		if _, dup := b.byName[f.Name]; !dup {
			b.byName[f.Name] = f
		}
	}
	return nil
}

func cstring(b []byte, off uint32) string {
	if uint64(off) >= uint64(len(b)) {
		return fmt.Sprintf("?name@%#x", off)
	}
	s := b[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// findPclntab returns the address and contents of the pclntab.
func (b *Binary) findPclntab() (uint64, []byte, error) {
	if s := b.ELF.Section(".gopclntab"); s != nil && s.Type != elf.SHT_NOBITS {
		data, err := s.Data()
		if err != nil {
			return 0, nil, err
		}
		if validHeader(data, b.Arch) {
			return s.Addr, data, nil
		}
	}
	// No section (renamed, or section headers stripped): search loaded data
	// for the header.
	for _, r := range b.regions() {
		if r.exec {
			continue
		}
		data := r.data
		for off := 0; off+64 <= len(data); off += 8 {
			i := bytes.Index(data[off:], []byte{0xf1, 0xff, 0xff, 0xff, 0, 0})
			if i < 0 {
				break
			}
			off += i &^ 7
			if i&7 != 0 {
				continue
			}
			if validHeader(data[off:], b.Arch) {
				return r.addr + uint64(off), data[off:], nil
			}
		}
	}
	// Old pclntab formats have other magics.
	for _, s := range b.ELF.Sections {
		if s.Name == ".gopclntab" {
			return 0, nil, fmt.Errorf("Go pclntab too old (fpcheck reads the Go 1.20+ format)")
		}
	}
	return 0, nil, ErrNotGo
}

func validHeader(d []byte, arch string) bool {
	if len(d) < 72 || binary.LittleEndian.Uint32(d) != pclnMagic || d[4] != 0 || d[5] != 0 || d[7] != 8 {
		return false
	}
	return (arch == "amd64" && d[6] == 1) || (arch == "arm64" && d[6] == 4)
}

// findText returns moduledata.text: moduledata starts with a pointer to the
// pclntab header, and text lies 22 words later, minpc 20 words later.
func (b *Binary) findText(pcAddr uint64) uint64 {
	var want [8]byte
	binary.LittleEndian.PutUint64(want[:], pcAddr)
	for _, r := range b.regions() {
		if !r.write {
			continue
		}
		data := r.data
		for off := 0; off+8*24 <= len(data); off += 8 {
			i := bytes.Index(data[off:], want[:])
			if i < 0 {
				break
			}
			off += i &^ 7
			if i&7 != 0 {
				continue
			}
			md := data[off:]
			text := binary.LittleEndian.Uint64(md[22*8:])
			minpc := binary.LittleEndian.Uint64(md[20*8:])
			if text != 0 && minpc >= text {
				return text
			}
		}
	}
	// Position-independent binaries keep these words in R_*_RELATIVE
	// relocations, whose addends are the values.
	if rel := b.relative(); rel != nil {
		for off, v := range rel {
			if v == pcAddr {
				if text, ok := rel[off+22*8]; ok && rel[off+20*8] >= text {
					return text
				}
			}
		}
	}
	if syms, err := b.ELF.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	if s := b.ELF.Section(".text"); s != nil {
		return s.Addr
	}
	return 0
}

// A region is loaded data: a section, or a segment when the file has no
// section headers.
type region struct {
	addr        uint64
	data        []byte
	write, exec bool
}

func (b *Binary) regions() []region {
	var out []region
	for _, s := range b.ELF.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		if data, err := s.Data(); err == nil {
			out = append(out, region{s.Addr, data, s.Flags&elf.SHF_WRITE != 0, s.Flags&elf.SHF_EXECINSTR != 0})
		}
	}
	if len(b.ELF.Sections) > 1 {
		return out
	}
	for _, p := range b.ELF.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err == nil {
			out = append(out, region{p.Vaddr, data, p.Flags&elf.PF_W != 0, p.Flags&elf.PF_X != 0})
		}
	}
	return out
}

// relative returns the R_X86_64_RELATIVE / R_AARCH64_RELATIVE relocations
// as offset -> addend.
func (b *Binary) relative() map[uint64]uint64 {
	s := b.ELF.Section(".rela.dyn")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	want := uint32(elf.R_X86_64_RELATIVE)
	if b.Arch == "arm64" {
		want = uint32(elf.R_AARCH64_RELATIVE)
	}
	m := map[uint64]uint64{}
	for i := 0; i+24 <= len(data); i += 24 {
		if uint32(binary.LittleEndian.Uint64(data[i+8:])) == want {
			m[binary.LittleEndian.Uint64(data[i:])] = binary.LittleEndian.Uint64(data[i+16:])
		}
	}
	return m
}

// Lookup returns the function containing pc, or nil.
func (b *Binary) Lookup(pc uint64) *Func {
	i := sort.Search(len(b.Funcs), func(i int) bool { return b.Funcs[i].Entry > pc })
	if i == 0 {
		return nil
	}
	f := &b.Funcs[i-1]
	if pc >= f.End {
		return nil
	}
	return f
}

// Func returns the function named name, or nil.
func (b *Binary) Func(name string) *Func { return b.byName[name] }

// Code returns the machine code of f.
func (b *Binary) Code(f *Func) ([]byte, error) { return b.Read(f.Entry, f.End-f.Entry) }

// Read returns n bytes of the loaded image at virtual address addr.
func (b *Binary) Read(addr, n uint64) ([]byte, error) {
	for _, p := range b.ELF.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr+n > p.Vaddr+p.Filesz {
			continue
		}
		buf := make([]byte, n)
		if _, err := p.ReadAt(buf, int64(addr-p.Vaddr)); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return nil, fmt.Errorf("address %#x+%d not in a loaded segment", addr, n)
}
