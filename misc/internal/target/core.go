package target

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Core is an ELF core file (from the kernel or gdb's gcore). Memory the core
// does not hold (read-only file-backed segments are normally left out) is read
// from the executable instead.
//
// A damaged core (cut short, or with corrupt headers or notes) is opened
// all the same: what it lost is counted in Damage, and reads of memory it
// no longer holds fail, so that a reader shows what is left.
type Core struct {
	Threads []Thread
	Auxv    []byte // nil if the core's notes were lost
	Damage  CoreDamage
	f       coreFile
	size    int64
	loads   []coreLoad
	exe     ExeReader
	bias    uint64
}

// CoreDamage is what a core file lost: the end of the file (Size < Want),
// and the notes and segments that the cut removed or whose headers make no
// sense.
type CoreDamage struct {
	Size, Want int64    // the file's size, and the size its headers describe
	Notes      int      // notes cut, corrupt, or in a note segment beyond the end of the file
	Segments   int      // PT_LOAD segments not wholly in the file, or with a corrupt header
	Details    []string // what was damaged, in the order found, at most maxDetails
}

const maxDetails = 8

// Truncated reports whether the file is shorter than its headers say.
func (d *CoreDamage) Truncated() bool { return d.Size < d.Want }

// Damaged reports whether anything of the core was lost.
func (d *CoreDamage) Damaged() bool { return d.Truncated() || len(d.Details) > 0 }

func (d *CoreDamage) note(format string, args ...any) {
	if len(d.Details) < maxDetails {
		d.Details = append(d.Details, fmt.Sprintf(format, args...))
	}
}

type coreLoad struct{ vaddr, memsz, filesz, off uint64 }

// ExeReader reads the executable's file-backed memory at link-time addresses.
type ExeReader interface {
	ReadVA(addr uint64, p []byte) error
	FileBacked(addr uint64) bool
}

const (
	ntPrstatus   = 1
	ntAuxv       = 6
	ntArmTLSNote = 0x401
	prRegOff     = 112 // offsetof(struct elf_prstatus, pr_reg) on 64-bit Linux
	prPidOff     = 32

	phentsize    = 56       // sizeof(Elf64_Phdr)
	pnXnum       = 0xffff   // e_phnum's escape: the count is section header 0's sh_info
	maxNoteBytes = 64 << 20 // bound on a note segment
	maxCoreBytes = 1 << 48  // no segment of a core ends beyond this
)

// OpenCore opens a core file for machine m (elf.EM_X86_64 or EM_AARCH64).
func OpenCore(path string, m elf.Machine) (*Core, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	c, err := newCore(f, st.Size(), m)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// coreFile is what a Core reads: an open core file.
type coreFile interface {
	io.ReaderAt
	io.Closer
}

// newCore reads the headers and notes of core file f of size bytes.
func newCore(f coreFile, size int64, m elf.Machine) (c *Core, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("malformed core file: %v", r)
		}
	}()
	hdr, progs, err := readCoreHeaders(f, size)
	if err != nil {
		return nil, fmt.Errorf("not an ELF core file: %w", err)
	}
	if elf.Type(hdr.Type) != elf.ET_CORE {
		return nil, fmt.Errorf("not a core file (ELF type %v)", elf.Type(hdr.Type))
	}
	if machine := elf.Machine(hdr.Machine); machine != m {
		return nil, fmt.Errorf("core file is for %v, the executable for %v", machine, m)
	}
	c = &Core{f: f, size: size}
	c.Damage.Size, c.Damage.Want = c.size, c.size
	// gdb's gcore writes the section headers last: a core cut short
	// loses them first, and needs none of them.
	if hdr.Shoff != 0 && hdr.Shoff < maxCoreBytes {
		c.Damage.Want = max(c.Damage.Want, int64(hdr.Shoff+uint64(hdr.Shnum)*uint64(hdr.Shentsize)))
	}
	bad := badProgs(progs, c.size)
	for i, p := range progs {
		typ := elf.ProgType(p.Type)
		if typ != elf.PT_LOAD && typ != elf.PT_NOTE {
			continue
		}
		if bad[i] != nil {
			if typ == elf.PT_NOTE {
				c.Damage.Notes++
			} else {
				c.Damage.Segments++
			}
			c.Damage.note("core file: %v", bad[i])
			continue
		}
		end := p.Off + p.Filesz
		c.Damage.Want = max(c.Damage.Want, int64(end))
		switch typ {
		case elf.PT_LOAD:
			if p.Filesz > 0 && end > uint64(c.size) {
				c.Damage.Segments++
			}
			c.loads = append(c.loads, coreLoad{p.Vaddr, p.Memsz, p.Filesz, p.Off})
		case elf.PT_NOTE:
			// gcore writes the notes after the memory: a core cut short
			// may hold only the first threads' notes, or none.
			if p.Filesz == 0 {
				continue
			}
			if p.Off >= uint64(c.size) {
				c.Damage.Notes++
				c.Damage.note("core file: its notes (thread registers, auxiliary vector) at offset %d are cut off", p.Off)
				continue
			}
			data := make([]byte, min(p.Filesz, uint64(c.size)-p.Off))
			if _, err := f.ReadAt(data, int64(p.Off)); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("reading the core's notes: %w", err)
			}
			cut := uint64(len(data)) < p.Filesz
			lost, err := c.parseNotes(data, m, cut)
			c.Damage.Notes += lost
			switch {
			case err != nil:
				c.Damage.note("core file: program header %d: %v", i, err)
			case cut:
				c.Damage.note("core file: %d of its %d bytes of notes (thread registers) are cut off", p.Filesz-uint64(len(data)), p.Filesz)
			}
		}
	}
	sort.Slice(c.loads, func(i, j int) bool { return c.loads[i].vaddr < c.loads[j].vaddr })
	if len(c.Threads) == 0 {
		c.Damage.note("core file: no thread's registers are left in it (gcore writes them at the end)")
	}
	return c, nil
}

// badProgs checks the PT_LOAD and PT_NOTE program headers against the file:
// bad[i] says why header i makes no sense, nil if it does. A header whose
// data ends beyond the end of the file is cut, not corrupt, if the cut can
// explain it: cores lay segments out in file order, so a cut removes a
// suffix, and a header that ends beyond the file while a later segment
// lies wholly in it is corrupt.
func badProgs(progs []elf.Prog64, size int64) []error {
	bad := make([]error, len(progs))
	lastIn := uint64(0) // the largest offset of a segment wholly in the file
	for i, p := range progs {
		if t := elf.ProgType(p.Type); t != elf.PT_LOAD && t != elf.PT_NOTE {
			continue
		}
		switch end := p.Off + p.Filesz; {
		case end < p.Off || end > maxCoreBytes:
			bad[i] = fmt.Errorf("program header %d: offset %#x + file size %#x is beyond any core file", i, p.Off, p.Filesz)
		case elf.ProgType(p.Type) == elf.PT_LOAD && p.Filesz > p.Memsz:
			bad[i] = fmt.Errorf("program header %d: file size %#x exceeds memory size %#x", i, p.Filesz, p.Memsz)
		case elf.ProgType(p.Type) == elf.PT_LOAD && p.Vaddr+p.Memsz < p.Vaddr:
			bad[i] = fmt.Errorf("program header %d: segment at %#x of %#x bytes wraps the address space", i, p.Vaddr, p.Memsz)
		case elf.ProgType(p.Type) == elf.PT_NOTE && p.Filesz > maxNoteBytes:
			bad[i] = fmt.Errorf("program header %d: %d-byte note segment", i, p.Filesz)
		case p.Filesz > 0 && end <= uint64(size):
			lastIn = max(lastIn, p.Off)
		}
	}
	for i, p := range progs {
		if t := elf.ProgType(p.Type); bad[i] == nil && (t == elf.PT_LOAD || t == elf.PT_NOTE) &&
			p.Off+p.Filesz > uint64(size) && p.Off < lastIn {
			bad[i] = fmt.Errorf("program header %d: segment at offset %#x needs bytes up to %d, past the end of the file (%d bytes), but later segments lie within it", i, p.Off, p.Off+p.Filesz, size)
		}
	}
	return bad
}

// readCoreHeaders reads the ELF header and program headers of a 64-bit
// little-endian core. Unlike debug/elf it does not read the section
// headers, which a core does not need and a truncated gcore core lacks
// (but for the first, when e_phnum is PN_XNUM).
func readCoreHeaders(r io.ReaderAt, size int64) (*elf.Header64, []elf.Prog64, error) {
	var hdr elf.Header64
	if err := binary.Read(io.NewSectionReader(r, 0, size), binary.LittleEndian, &hdr); err != nil {
		return nil, nil, err
	}
	if string(hdr.Ident[:4]) != elf.ELFMAG {
		return nil, nil, errors.New("bad magic number")
	}
	if elf.Class(hdr.Ident[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(hdr.Ident[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, nil, fmt.Errorf("%v %v; only 64-bit little-endian cores are read", elf.Class(hdr.Ident[elf.EI_CLASS]), elf.Data(hdr.Ident[elf.EI_DATA]))
	}
	if hdr.Phentsize != phentsize && hdr.Phnum != 0 {
		return nil, nil, fmt.Errorf("program header size %d, want %d", hdr.Phentsize, phentsize)
	}
	phnum := uint64(hdr.Phnum)
	if phnum == pnXnum {
		// More segments than e_phnum holds: the count is in section
		// header 0's sh_info (Elf64_Shdr, offset 44).
		var b [4]byte
		if _, err := r.ReadAt(b[:], int64(min(hdr.Shoff, maxCoreBytes))+44); err != nil {
			return nil, nil, fmt.Errorf("e_phnum is PN_XNUM but section header 0 cannot be read: %w", err)
		}
		phnum = uint64(binary.LittleEndian.Uint32(b[:]))
	}
	if end := hdr.Phoff + phnum*phentsize; hdr.Phoff > uint64(size) || end > uint64(size) {
		return nil, nil, fmt.Errorf("program header table (%d entries at offset %d) needs bytes up to %d, file has %d (truncated, or a corrupt e_phoff or e_phnum): %w",
			phnum, hdr.Phoff, end, size, io.ErrUnexpectedEOF)
	}
	progs := make([]elf.Prog64, phnum)
	if err := binary.Read(io.NewSectionReader(r, int64(hdr.Phoff), int64(phnum)*phentsize), binary.LittleEndian, progs); err != nil {
		return nil, nil, err
	}
	return &hdr, progs, nil
}

// parseNotes reads the notes in d. If cut, d is the start of a note segment
// that the end of the file cut short, and a last, partial note is lost. It
// returns how many notes were lost (cut or corrupt), and why the first
// corrupt one was.
func (c *Core) parseNotes(d []byte, m elf.Machine, cut bool) (lost int, err error) {
	le := binary.LittleEndian
	for len(d) > 0 {
		if len(d) < 12 {
			if cut {
				lost++
			}
			return lost, err
		}
		namesz, descsz, typ := le.Uint32(d), le.Uint32(d[4:]), le.Uint32(d[8:])
		nameEnd := 12 + align4(uint64(namesz))
		descEnd := nameEnd + align4(uint64(descsz))
		if descEnd > uint64(len(d)) || nameEnd > uint64(len(d)) {
			if cut {
				return lost + 1, err
			}
			return lost + 1, cmp.Or(err, errors.New("corrupt note segment: a note runs past its end"))
		}
		name := string(d[12 : 12+uint64(namesz)])
		desc := d[nameEnd : nameEnd+uint64(descsz)]
		d = d[descEnd:]
		if name != "CORE\x00" && name != "LINUX\x00" {
			continue
		}
		switch typ {
		case ntPrstatus:
			th, perr := prstatus(desc, m)
			if perr != nil {
				lost++
				err = cmp.Or(err, perr)
				continue
			}
			c.Threads = append(c.Threads, th)
		case ntAuxv:
			c.Auxv = append([]byte(nil), desc...)
		case ntArmTLSNote:
			if m == elf.EM_AARCH64 && len(c.Threads) > 0 && len(desc) >= 8 {
				c.Threads[len(c.Threads)-1].Regs.TLS = le.Uint64(desc)
			}
		}
	}
	return lost, err
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

func prstatus(desc []byte, m elf.Machine) (Thread, error) {
	le := binary.LittleEndian
	nreg := 27
	if m == elf.EM_AARCH64 {
		nreg = 34
	}
	if len(desc) < prRegOff+nreg*8 {
		return Thread{}, fmt.Errorf("NT_PRSTATUS note too short (%d bytes)", len(desc))
	}
	reg := func(i int) uint64 { return le.Uint64(desc[prRegOff+8*i:]) }
	t := Thread{TID: int(int32(le.Uint32(desc[prPidOff:])))}
	if m == elf.EM_AARCH64 {
		t.Regs = Regs{PC: reg(32), SP: reg(31), FP: reg(29), LR: reg(30)}
	} else {
		// struct user_regs_struct: rbp is 4, rip 16, rsp 19, fs_base 21.
		t.Regs = Regs{PC: reg(16), SP: reg(19), FP: reg(4), TLS: reg(21)}
	}
	return t, nil
}

// SetExe supplies the executable for memory the core leaves out.
func (c *Core) SetExe(exe ExeReader, bias uint64) { c.exe, c.bias = exe, bias }

// ReadAt reads the dumped process memory.
func (c *Core) ReadAt(p []byte, addr uint64) error {
	orig, origLen := addr, len(p)
	for len(p) > 0 {
		i := sort.Search(len(c.loads), func(i int) bool { return c.loads[i].vaddr+c.loads[i].memsz > addr })
		var n uint64
		if i < len(c.loads) && c.loads[i].vaddr <= addr {
			l := c.loads[i]
			n = min(uint64(len(p)), l.vaddr+l.memsz-addr)
			if addr < l.vaddr+l.filesz {
				n = min(n, l.vaddr+l.filesz-addr)
				if _, err := c.f.ReadAt(p[:n], int64(l.off+addr-l.vaddr)); err != nil {
					if errors.Is(err, io.EOF) {
						err = errors.New("past the end of the core file (cut short)")
					}
					return &FaultError{orig, origLen, err}
				}
				p, addr = p[n:], addr+n
				continue
			}
		}
		// Not in the core: the executable's own file-backed memory.
		if c.exe != nil && c.exe.FileBacked(addr-c.bias) {
			n = uint64(len(p))
			if i < len(c.loads) && c.loads[i].vaddr > addr {
				n = min(n, c.loads[i].vaddr-addr) // up to the next dumped segment
			}
			if err := c.exe.ReadVA(addr-c.bias, p[:n]); err != nil {
				return &FaultError{orig, origLen, err}
			}
			p, addr = p[n:], addr+n
			continue
		}
		return &FaultError{orig, origLen, errors.New("address not in the core file or the executable")}
	}
	return nil
}

// SegmentStarts returns the start addresses of the core's memory segments.
func (c *Core) SegmentStarts() []uint64 {
	out := make([]uint64, len(c.loads))
	for i, l := range c.loads {
		out[i] = l.vaddr
	}
	return out
}

// FileOffset returns the offset in the core file of the byte at addr, if the
// core holds it (whether or not the file was cut before it).
func (c *Core) FileOffset(addr uint64) (int64, bool) {
	for _, l := range c.loads {
		if addr >= l.vaddr && addr < l.vaddr+l.filesz {
			return int64(l.off + addr - l.vaddr), true
		}
	}
	return 0, false
}

// Dumped returns n bytes at addr if the core itself holds them.
func (c *Core) Dumped(addr uint64, n int) ([]byte, bool) {
	for _, l := range c.loads {
		if addr >= l.vaddr && addr+uint64(n) <= l.vaddr+l.filesz {
			b := make([]byte, n)
			if _, err := c.f.ReadAt(b, int64(l.off+addr-l.vaddr)); err != nil {
				return nil, false
			}
			return b, true
		}
	}
	return nil, false
}

// Close closes the core file.
func (c *Core) Close() error { return c.f.Close() }
