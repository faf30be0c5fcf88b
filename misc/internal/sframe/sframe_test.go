package sframe_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/sframe"
	"fpsafe.dev/misc/internal/sframe/sframetest"
)

const textBase = 0x401000

// amd64Section is two functions as a Go toolchain lays them out: f with a
// frame (push of the frame pointer at +4, frame allocated at +5, released at
// +0x20), and a root whose every PC is outermost, flagged as a signal
// trampoline.
func amd64Section() sframetest.Section {
	return sframetest.Section{
		ABI: sframe.ABIAMD64LE, Flags: sframe.FlagFDESorted | sframe.FlagFuncStartPCRel, FixedRA: -8,
		Addr: 0x600000,
		Funcs: []sframetest.Func{
			{Start: textBase, Size: 0x30, FREType: sframe.FRETypeAddr1, Rows: []sframetest.Row{
				{Start: 0, Base: sframe.BaseSP, Words: []int32{8}},
				{Start: 4, Base: sframe.BaseSP, Words: []int32{16, -16}},
				{Start: 5, Base: sframe.BaseSP, Size: 2, Words: []int32{0x128, -16}},
				{Start: 0x20, Base: sframe.BaseSP, Words: []int32{8}},
			}},
			{Start: textBase + 0x40, Size: 0x300, FREType: sframe.FRETypeAddr2, Signal: true, Rows: []sframetest.Row{
				{Start: 0, Base: sframe.BaseSP},
				{Start: 0x200, Base: sframe.BaseFP, Size: 4, Words: []int32{16, -16}},
			}},
		},
	}
}

func decode(t *testing.T, ts sframetest.Section) *sframe.Section {
	t.Helper()
	s, err := sframe.Decode(ts.Encode(), ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkRules(t *testing.T, s *sframe.Section, want map[uint64]string) {
	t.Helper()
	for pc, w := range want {
		r, err := s.RuleAt(pc)
		got := r.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != w {
			t.Errorf("RuleAt(%#x) = %s, want %s", pc, got, w)
		}
	}
}

func TestDecodeAMD64(t *testing.T) {
	s := decode(t, amd64Section())
	if len(s.FDEs) != 2 || s.NumFREs != 6 || s.FDEs[0].Start != textBase || s.FDEs[1].End() != textBase+0x340 {
		t.Fatalf("decoded %+v", s)
	}
	checkRules(t, s, map[uint64]string{
		textBase:         "CFA=r7+8 RA=CFA-8 FP=untracked",
		textBase + 3:     "CFA=r7+8 RA=CFA-8 FP=untracked",
		textBase + 4:     "CFA=r7+16 RA=CFA-8 FP=CFA-16",
		textBase + 0x1f:  "CFA=r7+296 RA=CFA-8 FP=CFA-16",
		textBase + 0x2f:  "CFA=r7+8 RA=CFA-8 FP=untracked",
		textBase + 0x30:  "error: 0x401030: no SFrame FDE covers the PC",
		textBase + 0x40:  "signal outermost (RA undefined)",
		textBase + 0x200: "signal outermost (RA undefined)",
		textBase + 0x240: "signal CFA=r6+16 RA=CFA-8 FP=CFA-16",
		textBase - 1:     "error: 0x400fff: no SFrame FDE covers the PC",
	})
}

// A section without the PC-relative flag: start offsets count from the
// section's start; an FDE whose first row starts late leaves a gap.
func TestDecodeSectionRelative(t *testing.T) {
	ts := amd64Section()
	ts.Flags = sframe.FlagFDESorted
	ts.Funcs[0].Rows = ts.Funcs[0].Rows[1:]
	s := decode(t, ts)
	checkRules(t, s, map[uint64]string{
		textBase:     "error: 0x401000: the PC's SFrame FDE has no FRE for it",
		textBase + 4: "CFA=r7+16 RA=CFA-8 FP=CFA-16",
	})
}

func TestDecodeAArch64(t *testing.T) {
	ts := sframetest.Section{ABI: sframe.ABIAArch64LE, Flags: sframe.FlagFuncStartPCRel, Addr: 0x10000, Aux: []byte{1, 2, 3},
		Funcs: []sframetest.Func{
			// Out of order and not flagged sorted: sframe.Decode sorts them.
			{Start: 0x20000, Size: 0x10000, FREType: sframe.FRETypeAddr4, Rows: []sframetest.Row{
				{Start: 0, Base: sframe.BaseSP, Words: []int32{0}},
				{Start: 0x8004, Base: sframe.BaseSP, Size: 4, Words: []int32{0x10000, -0x10000, -0x10008}, MangledRA: true},
			}},
			{Start: 0x1000, Size: 0x20, FREType: sframe.FRETypeAddr1, Rows: []sframetest.Row{
				{Start: 0, Base: sframe.BaseSP, Words: []int32{0}},
				{Start: 4, Base: sframe.BaseSP, Words: []int32{32, -32}},
				{Start: 8, Base: sframe.BaseSP, Words: []int32{32, -32, -40}},
			}},
		}}
	s := decode(t, ts)
	if string(s.Aux) != "\x01\x02\x03" || s.FDEs[0].Start != 0x1000 {
		t.Fatalf("aux %q, first FDE at %#x", s.Aux, s.FDEs[0].Start)
	}
	checkRules(t, s, map[uint64]string{
		0x1000:  "CFA=r31+0 RA=untracked FP=untracked",
		0x1004:  "CFA=r31+32 RA=CFA-32 FP=untracked",
		0x101c:  "CFA=r31+32 RA=CFA-32 FP=CFA-40",
		0x28004: "CFA=r31+65536 RA=CFA-65536 FP=CFA-65544",
	})
	if r, _ := s.RuleAt(0x28004); !r.MangledRA {
		t.Errorf("mangled-RA bit lost")
	}
}

func TestDecodeFlexAndMask(t *testing.T) {
	ts := sframetest.Section{ABI: sframe.ABIAMD64LE, Flags: sframe.FlagFDESorted, FixedRA: -8, Addr: 0x600000,
		Funcs: []sframetest.Func{
			// CFA = *(rbp-8), RA untracked (fixed), FP saved at CFA-16.
			{Start: 0x1000, Size: 0x40, FREType: sframe.FRETypeAddr1, FDEType: sframe.FDETypeFlex, Rows: []sframetest.Row{
				{Start: 0, Size: 1, Words: []int32{7<<3 | 1, 8}},
				{Start: 0x10, Size: 1, Words: []int32{6<<3 | 2 | 1, -8, 0, 2, -16}},
			}},
			// A PLT-like block of 16 bytes repeated.
			{Start: 0x2000, Size: 0x100, FREType: sframe.FRETypeAddr1, PCType: sframe.PCTypeMask, RepSize: 16, Rows: []sframetest.Row{
				{Start: 0, Words: []int32{8}, Base: sframe.BaseSP},
				{Start: 6, Words: []int32{16}, Base: sframe.BaseSP},
			}},
		}}
	s := decode(t, ts)
	checkRules(t, s, map[uint64]string{
		0x1000: "CFA=r7+8 RA=CFA-8 FP=untracked",
		0x1010: "CFA=(r6-8) RA=CFA-8 FP=CFA-16",
		0x2005: "CFA=r7+8 RA=CFA-8 FP=untracked",
		0x2036: "CFA=r7+16 RA=CFA-8 FP=untracked",
		0x20f0: "CFA=r7+8 RA=CFA-8 FP=untracked",
	})
}

func TestDecodeErrors(t *testing.T) {
	good := amd64Section().Encode()
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	le := binary.LittleEndian
	fre0 := sframe.HeaderSize + 2*sframe.FDEIndexLen // attributes of the first FDE
	for _, tc := range []struct {
		name string
		data []byte
		kind error
		msg  string
	}{
		{"short", good[:10], sframe.ErrCorrupt, "shorter than the 28-byte header"},
		{"magic", edit(func(b []byte) []byte { b[0] = 0; return b }), sframe.ErrCorrupt, "magic"},
		{"version2", edit(func(b []byte) []byte { b[2] = 2; return b }), sframe.ErrUnsupported, "version 2"},
		{"flags", edit(func(b []byte) []byte { b[3] |= sframe.FlagFramePointer; return b }), sframe.ErrCorrupt, "undefined in version 3"},
		{"abi", edit(func(b []byte) []byte { b[4] = 9; return b }), sframe.ErrCorrupt, "unknown ABI 9"},
		{"s390x", edit(func(b []byte) []byte { b[4] = sframe.ABIS390XBE; return b }), sframe.ErrUnsupported, "ABI 4"},
		{"no fixed RA", edit(func(b []byte) []byte { b[6] = 0; return b }), sframe.ErrCorrupt, "fixed RA"},
		{"aux", edit(func(b []byte) []byte { b[7] = 255; return b[:100] }), sframe.ErrCorrupt, "auxiliary header"},
		{"nfdes", edit(func(b []byte) []byte { le.PutUint32(b[8:], 1<<30); return b }), sframe.ErrCorrupt, "FDEs at offset"},
		{"nfres", edit(func(b []byte) []byte { le.PutUint32(b[12:], 7); return b }), sframe.ErrCorrupt, "header counts 7 FREs"},
		{"frelen", edit(func(b []byte) []byte { le.PutUint32(b[16:], 1<<31); return b }), sframe.ErrCorrupt, "FRE sub-section"},
		{"attr", edit(func(b []byte) []byte { le.PutUint32(b[sframe.HeaderSize+12:], 1<<20); return b }), sframe.ErrCorrupt, "attributes at FRE offset"},
		{"fre count", edit(func(b []byte) []byte { le.PutUint16(b[fre0:], 60000); return b }), sframe.ErrCorrupt, "cannot fit"},
		{"fre type", edit(func(b []byte) []byte { b[fre0+2] = 7; return b }), sframe.ErrCorrupt, "unknown FRE type 7"},
		{"fde type", edit(func(b []byte) []byte { b[fre0+3] = 5; return b }), sframe.ErrUnsupported, "FDE type 5"},
		{"mask", edit(func(b []byte) []byte { b[fre0+2] |= 1 << 4; return b }), sframe.ErrCorrupt, "zero repeat size"},
		{"order", edit(func(b []byte) []byte { b[fre0+5+3] = 0; return b }), sframe.ErrCorrupt, "not after FRE 0"},
		{"past end", edit(func(b []byte) []byte { b[fre0+5+3] = 0x31; return b }), sframe.ErrCorrupt, "past the function"},
		{"word size", edit(func(b []byte) []byte { b[fre0+5+1] |= 3 << 5; return b }), sframe.ErrCorrupt, "size code 3"},
		{"words", edit(func(b []byte) []byte { b[fre0+5+1] = 3 << 1; return b }), sframe.ErrCorrupt, "3 data words"},
		{"truncated", good[:len(good)-1], sframe.ErrCorrupt, "FRE sub-section"},
		{"unsorted", func() []byte {
			ts := amd64Section()
			ts.Funcs[0], ts.Funcs[1] = ts.Funcs[1], ts.Funcs[0]
			return ts.Encode()
		}(), sframe.ErrCorrupt, "not sorted"},
	} {
		_, err := sframe.Decode(tc.data, 0x600000)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.kind, tc.msg)
		}
	}
}

func TestFlexErrors(t *testing.T) {
	for _, words := range [][]int32{
		{2, 8},           // CFA control word names no register
		{7<<3 | 1, 8, 3}, // RA control word without its offset
	} {
		ts := sframetest.Section{ABI: sframe.ABIAMD64LE, FixedRA: -8, Funcs: []sframetest.Func{{Start: 0x1000, Size: 8, FDEType: sframe.FDETypeFlex,
			Rows: []sframetest.Row{{Words: words}}}}}
		s := decode(t, ts)
		if _, err := s.RuleAt(0x1000); !errors.Is(err, sframe.ErrCorrupt) {
			t.Errorf("words %v: got %v, want sframe.ErrCorrupt", words, err)
		}
	}
}

// FuzzDecode: no input panics or allocates more than its own size allows,
// and every rule of a decoded section can be asked for.
func FuzzDecode(f *testing.F) {
	f.Add(amd64Section().Encode())
	ts := amd64Section()
	ts.ABI, ts.FixedRA = sframe.ABIAArch64LE, 0
	f.Add(ts.Encode())
	f.Add([]byte{0xe2, 0xde, 3, 0, 3, 0, 0xf8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := sframe.Decode(data, 0x1000)
		if err != nil {
			var e *sframe.Error
			if !errors.As(err, &e) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not a one-line *sframe.Error", err)
			}
			return
		}
		words := 0
		for i := range s.FDEs {
			fde := &s.FDEs[i]
			for _, r := range fde.FREs {
				words += len(r.Words)
				s.RuleAt(fde.Start + uint64(r.Start))
			}
			s.RuleAt(fde.End() - 1)
			// Every word reads as its address plus 8: the walk climbs.
			// and a signal frame resumes 16 bytes higher.
			s.Unwind(sframe.Regs{PC: fde.Start, SP: 0x1000}, func(a uint64) (uint64, error) { return a + 8, nil }, 16,
				func(r sframe.Regs, cfa uint64) (sframe.Regs, bool) { return sframe.Regs{PC: cfa, SP: r.SP + 16}, true })
		}
		if words > len(data) || len(s.FDEs) > len(data)/sframe.FDEIndexLen {
			t.Fatalf("%d words and %d FDEs from %d bytes", words, len(s.FDEs), len(data))
		}
	})
}
