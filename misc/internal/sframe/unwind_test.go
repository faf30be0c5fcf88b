package sframe_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"fpsafe.dev/misc/internal/sframe"
	"fpsafe.dev/misc/internal/sframe/sframetest"
)

// memory is a sparse stack of 8-byte words.
type memory map[uint64]uint64

func (m memory) read(addr uint64) (uint64, error) {
	v, ok := m[addr]
	if !ok {
		return 0, fmt.Errorf("no word at %#x", addr)
	}
	return v, nil
}

// threeFrames is an AMD64 section for a frameless leaf at 0x1000, a
// function with a frame at 0x2000 (BP pushed at +1, frame of 32 at +4),
// and an outermost root at 0x3000.
func threeFrames() *sframe.Section {
	sp := func(start uint32, words ...int32) sframetest.Row {
		return sframetest.Row{Start: start, Base: sframe.BaseSP, Words: words}
	}
	ts := sframetest.Section{ABI: sframe.ABIAMD64LE, FixedRA: -8, Flags: sframe.FlagFDESorted | sframe.FlagFuncStartPCRel, Addr: 0x9000,
		Funcs: []sframetest.Func{
			{Start: 0x1000, Size: 0x10, Rows: []sframetest.Row{sp(0, 8)}},
			{Start: 0x2000, Size: 0x40, Rows: []sframetest.Row{sp(0, 8), sp(1, 16, -16), sp(4, 40, -16)}},
			{Start: 0x3000, Size: 0x20, Rows: []sframetest.Row{{Base: sframe.BaseSP}}},
		}}
	s, err := sframe.Decode(ts.Encode(), ts.Addr)
	if err != nil {
		panic(err)
	}
	return s
}

func TestUnwind(t *testing.T) {
	s := threeFrames()
	mem := memory{
		0x7000: 0x2020, // the leaf's return address, into the middle function
		0x7020: 0xbeef, // the middle function's saved BP
		0x7028: 0x3010, // its return address, into the root
	}
	regs := sframe.Regs{PC: 0x1004, SP: 0x7000, FP: 0x7020}
	pcs, err := s.Unwind(regs, mem.read, 10, nil)
	if want := []uint64{0x1004, 0x2020, 0x3010}; err != nil || !slices.Equal(pcs, want) {
		t.Fatalf("Unwind = %#x, %v; want %#x", pcs, err, want)
	}
	caller, _, err := s.Step(sframe.Regs{PC: 0x2020, SP: 0x7008, FP: 0x7020}, 0x201f, mem.read)
	if want := (sframe.Regs{PC: 0x3010, SP: 0x7030, FP: 0xbeef}); err != nil || caller != want {
		t.Errorf("Step = %+v, %v; want %+v", caller, err, want)
	}

	// A return address no FDE covers, and a stack word that cannot be read.
	mem[0x7028] = 0x5000
	if _, err := s.Unwind(regs, mem.read, 10, nil); !errors.Is(err, sframe.ErrNoFDE) {
		t.Errorf("return address outside the section: got %v, want ErrNoFDE", err)
	}
	delete(mem, 0x7028)
	if pcs, err := s.Unwind(regs, mem.read, 10, nil); !errors.Is(err, sframe.ErrUnwind) || len(pcs) != 2 {
		t.Errorf("unreadable return address: got %#x, %v; want two frames and ErrUnwind", pcs, err)
	}
}

// A signal handler's frame: the walk goes on from the registers the
// kernel saved, which the caller's signal function reads.
func TestUnwindSignal(t *testing.T) {
	ts := sframetest.Section{ABI: sframe.ABIAMD64LE, FixedRA: -8, Addr: 0x9000, Funcs: []sframetest.Func{
		{Start: 0x1000, Size: 0x10, Rows: []sframetest.Row{{Base: sframe.BaseSP, Words: []int32{8}}}},
		{Start: 0x3000, Size: 0x20, Rows: []sframetest.Row{{Base: sframe.BaseSP}}},
		{Start: 0x4000, Size: 0x20, Signal: true, Rows: []sframetest.Row{{Base: sframe.BaseSP, Words: []int32{8}}}},
	}}
	s, err := sframe.Decode(ts.Encode(), ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory{0x8000: 0x5000, 0x7000: 0x3004} // the restorer; the leaf's return address
	var got uint64
	signal := func(frame sframe.Regs, cfa uint64) (sframe.Regs, bool) {
		got = cfa
		return sframe.Regs{PC: 0x1008, SP: 0x7000}, true
	}
	pcs, err := s.Unwind(sframe.Regs{PC: 0x4002, SP: 0x8000}, mem.read, 10, signal)
	if want := []uint64{0x4002, 0x1008, 0x3004}; err != nil || !slices.Equal(pcs, want) || got != 0x8008 {
		t.Fatalf("Unwind = %#x, %v, signal frame at %#x; want %#x, signal frame at 0x8008", pcs, err, got, want)
	}
	if pcs, _ := s.Unwind(sframe.Regs{PC: 0x4002, SP: 0x8000}, mem.read, 10, nil); len(pcs) != 1 {
		t.Errorf("without a signal function: %#x, want the handler's frame only", pcs)
	}
}

// On AArch64 a leaf's return address is in LR until its frame is allocated.
func TestUnwindLinkRegister(t *testing.T) {
	ts := sframetest.Section{ABI: sframe.ABIAArch64LE, Flags: sframe.FlagFuncStartPCRel, Addr: 0x9000,
		Funcs: []sframetest.Func{
			{Start: 0x1000, Size: 0x10, Rows: []sframetest.Row{{Base: sframe.BaseSP, Words: []int32{0}}}},
			{Start: 0x2000, Size: 0x40, Rows: []sframetest.Row{{Base: sframe.BaseSP, Words: []int32{32, -32, -40}}}},
			{Start: 0x3000, Size: 0x20, Rows: []sframetest.Row{{Base: sframe.BaseSP}}},
		}}
	s, err := sframe.Decode(ts.Encode(), ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory{0x6fe0: 0x3008, 0x6fd8: 0x1234} // the middle frame's record at its SP: LR, and R29 below it
	pcs, err := s.Unwind(sframe.Regs{PC: 0x1008, SP: 0x6fe0, FP: 0x6fd8, LR: 0x2010}, mem.read, 10, nil)
	if want := []uint64{0x1008, 0x2010, 0x3008}; err != nil || !slices.Equal(pcs, want) {
		t.Fatalf("Unwind = %#x, %v; want %#x", pcs, err, want)
	}
}
