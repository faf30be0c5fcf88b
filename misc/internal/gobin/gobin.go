// Package gobin reads a Go ELF executable's function table from its pclntab,
// the runtime's own PC tables, and symbolizes program counters with it. It is
// the one reader of the pclntab under misc/: fpcheck checks machine code
// function by function with it, golineage symbolizes and unwinds with it.
//
// It needs neither DWARF nor a symbol table, so it works on binaries built
// with -ldflags='-s -w' and on files whose section headers were removed: the
// pclntab survives stripping because the runtime needs it. The pclntab is
// found by its section name (.gopclntab, or .data.rel.ro.gopclntab in PIE and
// externally linked binaries), else by the runtime.pclntab symbol, else by
// scanning read-only data (sections, or PT_LOAD segments when there are none)
// for its header. The runtime's module data record (runtime.firstmoduledata)
// is then found as the word in writable data that points at the pclntab, with
// position-independent executables' R_*_RELATIVE relocations applied; it
// supplies the text start, which the pclntab header no longer carries, and
// the go:func.* base that inline-tree funcdata is relative to.
//
// All addresses are link-time addresses: callers subtract the load bias of a
// position-independent executable first.
//
// The input is foreign bytes. Every offset read from the file is checked
// before use, every allocation is bounded by the file's size, and a file
// that contradicts itself gives an error wrapping one of the kinds in
// errors.go, never a panic.
package gobin

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"sync"
	"syscall"
)

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
	PclntabAddr uint64
	ModuleData  uint64 // address of firstmoduledata, 0 if not found
	Funcs       []Func // sorted by Entry

	attached sync.Map // Attach's values, by key

	gofunc     uint64 // moduledata.gofunc, 0 if unknown
	inlineSkip bool   // true when gofunc is unknown (no inline expansion)

	tab       []byte // pclntab from its header to its end
	nfunc     int
	funcnames []byte
	cutab     []byte
	filetab   []byte
	pctab     []byte
	pcln      []byte // functab + _func records

	r      io.ReaderAt
	closer io.Closer
	mapped []byte // the whole file, mapped (OpenMapped); nil otherwise
	size   int64
	segs   []seg
	regs   []region // loaded data, read on first use
	syms   map[string]uint64
	byName map[string]*Func
}

// Open opens and indexes the executable at path.
func Open(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	b, err := newBinary(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	b.closer = f
	return b, nil
}

// OpenMapped is Open for the executable of a running process (a
// /proc/PID/exe path): its pclntab, the largest table, is used in place
// from a read-only mapping of the file instead of being copied into the
// heap. The pages it touches are the page cache's, shared with the process
// and reclaimable, so a reader that keeps many executables open (the node
// agent) holds little memory of its own for them. The kernel refuses to
// write a file that a process executes (ETXTBSY), so the mapping cannot be
// cut short under the reader while the process runs; a reader that keeps
// the Binary after the process exits runs its reads with
// runtime/debug.SetPanicOnFault, in case the file is truncated then.
func OpenMapped(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 || st.Size() != int64(int(st.Size())) {
		return Open(path)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return Open(path)
	}
	b, err := newBinaryMapped(m, path)
	if err != nil {
		syscall.Munmap(m)
		return nil, err
	}
	b.closer = unmapper(m)
	return b, nil
}

// ReleaseMapped drops the pages of b's file mapping (OpenMapped) from the
// reader's resident set. They stay in the page cache, and a read faults
// them back in: a reader that keeps executables open for long (the node
// agent) calls it now and then, so that its resident size counts the pages
// it uses since, not every page it ever read. It does nothing for a Binary
// read into memory.
func (b *Binary) ReleaseMapped() {
	if b.mapped != nil {
		syscall.Madvise(b.mapped, syscall.MADV_DONTNEED)
	}
}

type unmapper []byte

func (m unmapper) Close() error { return syscall.Munmap(m) }

func newBinaryMapped(m []byte, path string) (*Binary, error) {
	return newBinaryFrom(bytes.NewReader(m), int64(len(m)), path, m)
}

// newBinary reads the executable from r, which holds size bytes.
func newBinary(r io.ReaderAt, size int64, path string) (*Binary, error) {
	return newBinaryFrom(r, size, path, nil)
}

func newBinaryFrom(r io.ReaderAt, size int64, path string, mapped []byte) (*Binary, error) {
	var magic [len(elf.ELFMAG)]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil, openError(path, ErrNotELF, "no ELF magic at the start of the file")
	}
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, openError(path, ErrBadELF, "%v", err)
	}
	b := &Binary{Path: path, ELF: ef, Order: ef.ByteOrder, r: r, size: size, Entry: ef.Entry, PIE: ef.Type == elf.ET_DYN, mapped: mapped}
	switch ef.Machine {
	case elf.EM_X86_64:
		b.Arch, b.Quantum = "amd64", 1
	case elf.EM_AARCH64:
		b.Arch, b.Quantum = "arm64", 4
	default:
		return nil, openError(path, ErrUnsupported, "architecture %v (amd64 and arm64 are read)", ef.Machine)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		return nil, openError(path, ErrUnsupported, "ELF class %v, %v (64-bit little-endian files are read)", ef.Class, ef.Data)
	}
	b.PtrSize = 8
	b.loadSegments()
	if bi, err := buildinfo.Read(r); err == nil {
		b.GoVersion = bi.GoVersion
	}
	if err := b.findPclntab(); err != nil {
		return nil, err
	}
	if err := b.findModuledata(); err != nil {
		return nil, err
	}
	if err := b.loadFuncs(); err != nil {
		return nil, err
	}
	return b, nil
}

// Close releases the file.
func (b *Binary) Close() error {
	if b.closer == nil {
		return nil
	}
	return b.closer.Close()
}

// symbol returns the value of the ELF symbol name, if the file has a symbol
// table that defines it.
func (b *Binary) symbol(name string) (uint64, bool) {
	if b.syms == nil {
		b.syms = map[string]uint64{}
		syms, _ := b.ELF.Symbols()
		for _, s := range syms {
			switch s.Name {
			case "runtime.pclntab", "runtime.firstmoduledata", "runtime.text":
				b.syms[s.Name] = s.Value
			}
		}
	}
	v, ok := b.syms[name]
	return v, ok
}

func (b *Binary) word(p []byte) uint64 { return b.Order.Uint64(p) }

// cstring returns the NUL-terminated string at off in tab, at most maxName
// bytes long; ok is false when off is outside tab.
func cstring(tab []byte, off uint64) (string, bool) {
	if off >= uint64(len(tab)) {
		return "", false
	}
	s := tab[off:]
	s = s[:min(len(s), maxName)]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s), true
}

// maxName bounds a name or file path read from the tables.
const maxName = 4096

// Attach returns the value attached to b under key, made by mk on the
// first call: a package that keeps state per binary (the unwinder's caches
// and decoded tables) keeps it with the binary, so that it lives and dies
// with it, and two binaries never share it.
func (b *Binary) Attach(key any, mk func() any) any {
	if v, ok := b.attached.Load(key); ok {
		return v
	}
	v, _ := b.attached.LoadOrStore(key, mk())
	return v
}

// Replace attaches v under key in place of what Attach made, and returns
// that (tests that make a binary look like one without its table).
func (b *Binary) Replace(key, v any) (old any) {
	old, _ = b.attached.Swap(key, v)
	return old
}
