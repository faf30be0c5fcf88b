package target

import (
	"debug/elf"
	"encoding/binary"
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
	if err := c.parseNotes(note("CORE", ntPrstatus, desc), elf.EM_X86_64, false); err != nil {
		t.Fatal(err)
	}
	want := Thread{TID: 4242, Regs: Regs{PC: 0x401000, SP: 0xc000, FP: 0xc100, TLS: 0x7000}}
	if len(c.Threads) != 1 || c.Threads[0] != want {
		t.Fatalf("got %+v, want %+v", c.Threads, want)
	}
	if err := c.parseNotes(note("CORE", ntPrstatus, desc[:50]), elf.EM_X86_64, false); err == nil {
		t.Error("short NT_PRSTATUS accepted")
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
