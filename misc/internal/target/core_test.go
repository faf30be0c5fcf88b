package target

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"
)

func note(name string, typ uint32, desc []byte) []byte {
	le := binary.LittleEndian
	b := make([]byte, 12)
	le.PutUint32(b, uint32(len(name)+1))
	le.PutUint32(b[4:], uint32(len(desc)))
	le.PutUint32(b[8:], typ)
	n := append([]byte(name), 0)
	for len(n)%4 != 0 {
		n = append(n, 0)
	}
	b = append(b, n...)
	d := append([]byte(nil), desc...)
	for len(d)%4 != 0 {
		d = append(d, 0)
	}
	return append(b, d...)
}

func TestPrstatus(t *testing.T) {
	desc := make([]byte, prRegOff+27*8)
	binary.LittleEndian.PutUint32(desc[prPidOff:], 4242)
	binary.LittleEndian.PutUint64(desc[prRegOff+16*8:], 0x401000) // rip
	binary.LittleEndian.PutUint64(desc[prRegOff+19*8:], 0xc000)   // rsp
	binary.LittleEndian.PutUint64(desc[prRegOff+4*8:], 0xc100)    // rbp
	binary.LittleEndian.PutUint64(desc[prRegOff+21*8:], 0x7000)   // fs_base
	c := &Core{}
	if _, err := c.parseNotes(note("CORE", ntPrstatus, desc), elf.EM_X86_64, false); err != nil {
		t.Fatal(err)
	}
	want := Thread{TID: 4242, Regs: Regs{PC: 0x401000, SP: 0xc000, FP: 0xc100, TLS: 0x7000}}
	if len(c.Threads) != 1 || c.Threads[0] != want {
		t.Fatalf("got %+v, want %+v", c.Threads, want)
	}
	if lost, err := c.parseNotes(note("CORE", ntPrstatus, desc[:50]), elf.EM_X86_64, false); err == nil || lost != 1 {
		t.Errorf("short NT_PRSTATUS: %d notes lost, error %v; want 1 and an error", lost, err)
	}
}

// FuzzCoreNotes: no note segment makes the parser panic.
func FuzzCoreNotes(f *testing.F) {
	desc := make([]byte, prRegOff+34*8)
	f.Add(note("CORE", ntPrstatus, desc))
	f.Add(append(note("CORE", ntAuxv, make([]byte, 32)), note("LINUX", ntArmTLSNote, make([]byte, 8))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
			c := &Core{}
			c.parseNotes(b, m, false)
			c.parseNotes(b, m, true)
		}
	})
}

// bytesFile is a core file in memory.
type bytesFile struct{ *bytes.Reader }

func (bytesFile) Close() error { return nil }

// synthCore is a small core: an ELF header, a note segment with one
// NT_PRSTATUS, and one page of memory at 0x10000.
func synthCore() []byte {
	le := binary.LittleEndian
	notes := note("CORE", ntPrstatus, make([]byte, prRegOff+27*8))
	const phoff, nph = 64, 2
	dataOff := uint64(phoff + nph*phentsize)
	hdr := elf.Header64{Type: uint16(elf.ET_CORE), Machine: uint16(elf.EM_X86_64), Version: 1,
		Phoff: phoff, Ehsize: 64, Phentsize: phentsize, Phnum: nph}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	progs := []elf.Prog64{
		{Type: uint32(elf.PT_NOTE), Off: dataOff, Filesz: uint64(len(notes))},
		{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_W), Off: dataOff + uint64(len(notes)), Vaddr: 0x10000, Filesz: 4096, Memsz: 4096},
	}
	var b bytes.Buffer
	binary.Write(&b, le, hdr)
	binary.Write(&b, le, progs)
	b.Write(notes)
	b.Write(bytes.Repeat([]byte{0xaa}, 4096))
	return b.Bytes()
}

func TestSynthCore(t *testing.T) {
	data := synthCore()
	c, err := newCore(bytesFile{bytes.NewReader(data)}, int64(len(data)), elf.EM_X86_64)
	if err != nil {
		t.Fatal(err)
	}
	if c.Damage.Damaged() || len(c.Threads) != 1 {
		t.Fatalf("whole core: damage %+v, %d threads; want none and 1", c.Damage, len(c.Threads))
	}
	// Each program header made corrupt is named, and not called a cut.
	le := binary.LittleEndian
	for _, tc := range []struct {
		name      string
		field     int // offset in the second program header (the PT_LOAD)
		v         uint64
		want      string
		segs, nts int
	}{
		{"offset overflows", 8, 1<<64 - 16, "core file: program header 1: offset", 1, 0},
		{"file size beyond memory size", 32, 1 << 20, "core file: program header 1: file size 0x100000 exceeds memory size", 1, 0},
	} {
		bad := append([]byte(nil), data...)
		le.PutUint64(bad[64+phentsize+tc.field:], tc.v)
		c, err := newCore(bytesFile{bytes.NewReader(bad)}, int64(len(bad)), elf.EM_X86_64)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Damage.Truncated() || c.Damage.Segments != tc.segs || c.Damage.Notes != tc.nts || len(c.Damage.Details) == 0 || !strings.HasPrefix(c.Damage.Details[0], tc.want) {
			t.Errorf("%s: damage %+v; want %d segments, %d notes, not truncated, first detail %q", tc.name, c.Damage, tc.segs, tc.nts, tc.want)
		}
	}
	// A note segment whose size runs past the file while the memory after
	// it lies in the file is corrupt, not cut.
	bad := append([]byte(nil), data...)
	le.PutUint64(bad[64+32:], uint64(len(data)))
	c, err = newCore(bytesFile{bytes.NewReader(bad)}, int64(len(bad)), elf.EM_X86_64)
	if err != nil {
		t.Fatal(err)
	}
	if c.Damage.Truncated() || c.Damage.Notes != 1 || !strings.Contains(strings.Join(c.Damage.Details, "\n"), "program header 0: segment at offset") {
		t.Errorf("note segment past the end: damage %+v; want 1 note, not truncated, program header 0 named", c.Damage)
	}
	// Cut in the memory: one segment lost, the threads kept.
	c, err = newCore(bytesFile{bytes.NewReader(data[:len(data)-100])}, int64(len(data)-100), elf.EM_X86_64)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Damage.Truncated() || c.Damage.Want != int64(len(data)) || c.Damage.Segments != 1 || len(c.Threads) != 1 {
		t.Errorf("cut by 100 bytes: damage %+v, %d threads; want truncated at %d of %d, 1 segment, 1 thread", c.Damage, len(c.Threads), len(data)-100, len(data))
	}
	// The program header table beyond the end of the file: an error that
	// says what it is.
	bad = append([]byte(nil), data...)
	le.PutUint16(bad[56:], 0x7000) // e_phnum
	if _, err := newCore(bytesFile{bytes.NewReader(bad)}, int64(len(bad)), elf.EM_X86_64); err == nil || !strings.Contains(err.Error(), "program header table (28672 entries") {
		t.Errorf("e_phnum 0x7000: error %v; want one naming the program header table", err)
	}
}

// FuzzCoreHeaders: no core file makes the reader panic, and every segment
// it keeps can be read or fails with an error.
func FuzzCoreHeaders(f *testing.F) {
	data := synthCore()
	f.Add(data)
	f.Add(data[:len(data)-100])
	f.Add(data[:200])
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := newCore(bytesFile{bytes.NewReader(b)}, int64(len(b)), elf.EM_X86_64)
		if err != nil {
			return
		}
		if c.Damage.Size > c.Damage.Want {
			t.Fatalf("size %d larger than wanted %d", c.Damage.Size, c.Damage.Want)
		}
		var p [16]byte
		for _, a := range c.SegmentStarts() {
			c.ReadAt(p[:], a)
			c.FileOffset(a)
		}
	})
}
