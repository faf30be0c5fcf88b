package gobin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

// The fuzz targets corrupt a real binary the way a damaged file would be:
// an input is a list of edits, each five bytes: a little-endian offset
// (taken modulo the length of what is edited) and the byte to store there.

func applyEdits(data, edits []byte) {
	for ; len(edits) >= 5 && len(data) > 0; edits = edits[5:] {
		off := binary.LittleEndian.Uint32(edits) % uint32(len(data))
		data[off] = edits[4]
	}
}

func edit(off uint32, v byte) []byte {
	return []byte{byte(off), byte(off >> 8), byte(off >> 16), byte(off >> 24), v}
}

// templates are small programs built once with the toolchain running the
// tests: 0 a stripped executable, 1 a stripped PIE.
var templates struct {
	once sync.Once
	exes [2][]byte
	tabs [2][2]uint64 // file offset and size of each one's pclntab
	err  error
}

func template(t testing.TB, i int) []byte {
	exe, _, _ := templateTab(t, i)
	return exe
}

// templateTab returns a copy of template i and its pclntab's file range.
func templateTab(t testing.TB, i int) ([]byte, uint64, uint64) {
	templates.once.Do(func() {
		for j, flags := range [][]string{{"-ldflags=-s -w"}, {"-buildmode=pie", "-ldflags=-s -w"}} {
			exe := buildProg(t, "./testdata/symprog", "template", nil, flags...)
			if templates.exes[j], templates.err = os.ReadFile(exe); templates.err != nil {
				return
			}
			off, size := pclntabRange(t, templates.exes[j])
			templates.tabs[j] = [2]uint64{off, size}
		}
	})
	if templates.err != nil {
		t.Fatal(templates.err)
	}
	i %= len(templates.exes)
	return bytes.Clone(templates.exes[i]), templates.tabs[i][0], templates.tabs[i][1]
}

// open reads a binary from memory.
func openBytes(data []byte) (*Binary, error) {
	return newBinary(bytes.NewReader(data), int64(len(data)), "fuzz")
}

// exercise runs every query a tool makes on every function of b. It fails
// the test only by panicking (or by the fuzzer's timeout).
func exercise(t testing.TB, b *Binary) {
	for i := range b.Funcs {
		f := &b.Funcs[i]
		if f.End < f.Entry {
			t.Fatalf("function %d: end %#x before entry %#x accepted", i, f.End, f.Entry)
		}
		if code, err := b.Code(f); err == nil && uint64(len(code)) != f.End-f.Entry {
			t.Fatalf("Code(%s) returned %d bytes for %d", f.Name, len(code), f.End-f.Entry)
		}
		mid := f.Entry + (f.End-f.Entry)/2
		if runs, ok := f.SPDeltaRuns(); ok && len(runs) > 0 {
			if last := runs[len(runs)-1]; last.End > f.End || runs[0].Start != f.Entry {
				t.Fatalf("SPDeltaRuns(%s) covers [%#x, %#x), outside [%#x, %#x)", f.Name, runs[0].Start, last.End, f.Entry, f.End)
			}
		}
		f.SPDelta(mid)
		f.FileLine(mid)
		b.Frames(mid, false)
		b.Frames(f.End, true)
		for _, fr := range b.OuterInlined(f) {
			if fr.PC < f.Entry || fr.PC >= f.End {
				t.Fatalf("OuterInlined(%s) gave pc %#x, outside [%#x, %#x)", f.Name, fr.PC, f.Entry, f.End)
			}
		}
		b.FuncNameIs(mid, f.Name)
		b.LookupFunc(f.Name)
	}
	b.FindFunc(b.Text)
	b.FindFunc(b.Etext)
	if sd, err := b.SFrame(); err == nil && uint64(len(sd.Data)) > uint64(b.size) {
		t.Fatalf("SFrame returned %d bytes from a %d-byte file", len(sd.Data), b.size)
	} else if err != nil && strings.Contains(err.Error(), "\n") {
		t.Fatalf("SFrame error spans lines: %q", err)
	}
}

// checkError insists that a rejected input gets one line of a known kind.
func checkError(t testing.TB, err error) {
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans lines: %q", err)
	}
	for _, kind := range []error{ErrNotELF, ErrNoPclntab, ErrBadELF, ErrUnsupported, ErrCorrupt} {
		if errors.Is(err, kind) {
			return
		}
	}
	t.Fatalf("error of no known kind: %v", err)
}

// pclntabRange returns the file offset and size of the pclntab of exe.
func pclntabRange(t testing.TB, exe []byte) (uint64, uint64) {
	b, err := openBytes(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range pclntabSections {
		if s := b.ELF.Section(name); s != nil {
			return s.Offset, s.Size
		}
	}
	t.Fatal("template has no pclntab section")
	return 0, 0
}

// FuzzPclntab flips bytes of a real pclntab and cuts it short, then opens
// the binary and queries every function.
func FuzzPclntab(f *testing.F) {
	exe, off, size := templateTab(f, 0)
	tab := exe[off : off+size]
	pcln := binary.LittleEndian.Uint64(tab[hdrPclnOff:])
	// The end-before-entry case of issue 16: function 2's entry set to 0.
	f.Add(uint8(0), append(edit(uint32(pcln+2*functabSize), 0), edit(uint32(pcln+2*functabSize+1), 0)...), uint32(0))
	f.Add(uint8(1), edit(hdrNfunc+3, 0xff), uint32(0))
	f.Add(uint8(0), edit(hdrPctabOff, 0xee), uint32(0))
	f.Add(uint8(0), []byte(nil), uint32(size/2))
	f.Add(uint8(1), []byte(nil), uint32(pcln+100))
	f.Fuzz(func(t *testing.T, tmpl uint8, edits []byte, cut uint32) {
		exe, off, size := templateTab(t, int(tmpl))
		tab := exe[off : off+size]
		applyEdits(tab, edits)
		if cut != 0 && uint64(cut) < size {
			// A pclntab cut short: the rest of its section reads as zeros.
			clear(tab[cut:])
		}
		b, err := openBytes(exe)
		if err != nil {
			checkError(t, err)
			return
		}
		exercise(t, b)
	})
}

// FuzzELF flips bytes anywhere in a real binary: ELF header, program and
// section headers, relocations, module data, code.
func FuzzELF(f *testing.F) {
	exe := template(f, 0)
	f.Add(uint8(0), edit(0x3c, 0)) // e_shnum: no section headers
	f.Add(uint8(1), append(edit(0x3c, 0), edit(0x3d, 0)...))
	f.Add(uint8(0), edit(0x12, 0xf3))                     // e_machine
	f.Add(uint8(1), edit(0x20, 0xff))                     // e_phoff
	f.Add(uint8(0), edit(uint32(len(exe)-64+0x20), 0xff)) // a section's size
	f.Fuzz(func(t *testing.T, tmpl uint8, edits []byte) {
		exe := template(t, int(tmpl))
		applyEdits(exe, edits)
		b, err := openBytes(exe)
		if err != nil {
			checkError(t, err)
			return
		}
		exercise(t, b)
	})
}

// TestEndBeforeEntry is issue 16's item 4: a function table in which a
// function ends before its entry made fpcheck binary allocate
// end-entry bytes ("makeslice: len out of range"). It must be refused.
func TestEndBeforeEntry(t *testing.T) {
	exe := template(t, 0)
	off, _ := pclntabRange(t, exe)
	tab := exe[off:]
	pcln := binary.LittleEndian.Uint64(tab[hdrPclnOff:])
	const i = 10
	binary.LittleEndian.PutUint32(tab[pcln+(i+1)*functabSize:], 0) // function i+1's entry
	b, err := openBytes(exe)
	if err == nil {
		exercise(t, b)
		t.Fatal("a function ending before its entry was accepted")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "function 10 ends at") {
		t.Fatalf("got %v, want ErrCorrupt naming function 10", err)
	}
}
