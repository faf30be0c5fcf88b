package target

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Core is an ELF core file (from the kernel or gdb's gcore). Memory the core
// does not hold (read-only file-backed segments are normally left out) is read
// from the executable instead.
type Core struct {
	Threads  []Thread
	Auxv     []byte
	Warnings []string
	f        *os.File
	size     int64
	loads    []coreLoad
	exe      ExeReader
	bias     uint64
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
)

// OpenCore opens a core file for machine m (elf.EM_X86_64 or EM_AARCH64).
func OpenCore(path string, m elf.Machine) (c *Core, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: malformed core file: %v", path, r)
		}
		if err != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hdr, progs, err := readCoreHeaders(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: not an ELF core file: %v", path, err)
	}
	if elf.Type(hdr.Type) != elf.ET_CORE {
		return nil, fmt.Errorf("%s: not a core file (ELF type %v)", path, elf.Type(hdr.Type))
	}
	if machine := elf.Machine(hdr.Machine); machine != m {
		return nil, fmt.Errorf("%s: core file is for %v, the executable for %v", path, machine, m)
	}
	c = &Core{f: f, size: st.Size()}
	// gdb's gcore writes the section headers last: a core cut short loses
	// them first, and needs none of them.
	if end := hdr.Shoff + uint64(hdr.Shnum)*uint64(hdr.Shentsize); hdr.Shoff != 0 && end > uint64(c.size) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("core file truncated: its section headers need bytes up to %d, file has %d", end, c.size))
	}
	for _, p := range progs {
		switch elf.ProgType(p.Type) {
		case elf.PT_LOAD:
			if p.Off+p.Filesz > uint64(c.size) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("core file truncated: segment at %#x needs bytes up to %d, file has %d", p.Vaddr, p.Off+p.Filesz, c.size))
			}
			c.loads = append(c.loads, coreLoad{p.Vaddr, p.Memsz, p.Filesz, p.Off})
		case elf.PT_NOTE:
			if p.Filesz > 64<<20 {
				return nil, fmt.Errorf("%s: malformed core file: %d-byte note segment", path, p.Filesz)
			}
			// gcore writes the notes after the memory: a core cut short
			// may hold only the first threads' notes.
			data := make([]byte, p.Filesz)
			n, err := io.ReadFull(io.NewSectionReader(f, int64(p.Off), int64(p.Filesz)), data)
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s: reading the core's notes: %v", path, err)
			}
			if n < len(data) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("core file truncated: %d of its %d bytes of notes (thread registers) are missing; threads whose notes were cut are not shown", len(data)-n, len(data)))
			}
			if err := c.parseNotes(data[:n], m, n < len(data)); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
		}
	}
	sort.Slice(c.loads, func(i, j int) bool { return c.loads[i].vaddr < c.loads[j].vaddr })
	if len(c.Threads) == 0 {
		if len(c.Warnings) > 0 {
			return nil, fmt.Errorf("%s: no thread's registers are left in the core (%s); cores from gcore hold them at the end, so a cut one has no stacks to show", path, strings.Join(c.Warnings, "; "))
		}
		return nil, fmt.Errorf("%s: core file has no thread status notes (NT_PRSTATUS)", path)
	}
	return c, nil
}

// readCoreHeaders reads the ELF header and program headers of a 64-bit
// little-endian core. Unlike debug/elf it does not read the section
// headers, which a core does not need and a truncated gcore core lacks.
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
	const phentsize = 56 // sizeof(Elf64_Phdr)
	if hdr.Phentsize != phentsize && hdr.Phnum != 0 {
		return nil, nil, fmt.Errorf("program header size %d, want %d", hdr.Phentsize, phentsize)
	}
	if hdr.Phoff > uint64(size) || hdr.Phoff+uint64(hdr.Phnum)*phentsize > uint64(size) {
		return nil, nil, fmt.Errorf("program headers need bytes up to %d, file has %d: %w", hdr.Phoff+uint64(hdr.Phnum)*phentsize, size, io.ErrUnexpectedEOF)
	}
	progs := make([]elf.Prog64, hdr.Phnum)
	if err := binary.Read(io.NewSectionReader(r, int64(hdr.Phoff), int64(hdr.Phnum)*phentsize), binary.LittleEndian, progs); err != nil {
		return nil, nil, err
	}
	return &hdr, progs, nil
}

// parseNotes reads the notes in d. If cut, d is the start of a note segment
// that the end of the file cut short, and a last, partial note is ignored.
func (c *Core) parseNotes(d []byte, m elf.Machine, cut bool) error {
	le := binary.LittleEndian
	for len(d) >= 12 {
		namesz, descsz, typ := le.Uint32(d), le.Uint32(d[4:]), le.Uint32(d[8:])
		nameEnd := 12 + align4(uint64(namesz))
		descEnd := nameEnd + align4(uint64(descsz))
		if descEnd > uint64(len(d)) || nameEnd > uint64(len(d)) {
			if cut {
				return nil
			}
			return errors.New("corrupt note segment")
		}
		name := string(d[12 : 12+uint64(namesz)])
		desc := d[nameEnd : nameEnd+uint64(descsz)]
		d = d[descEnd:]
		if name != "CORE\x00" && name != "LINUX\x00" {
			continue
		}
		switch typ {
		case ntPrstatus:
			th, err := prstatus(desc, m)
			if err != nil {
				return err
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
	return nil
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
					return &FaultError{orig, origLen, fmt.Errorf("core file truncated at %#x: %v", addr, err)}
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
