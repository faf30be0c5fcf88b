package stack

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/gobin/gobintest"
	"fpsafe.dev/misc/internal/sframe"
	"fpsafe.dev/misc/internal/target"
)

//go:noinline
func leafLoop(x uint64) uint64 {
	for i := 0; i < 100; i++ {
		x = x*31 + 7
	}
	return x
}

//go:noinline
func callsLeaf(x uint64) uint64 { return leafLoop(x) + leafLoop(x+1) }

//go:noinline
func outer(x uint64) uint64 { return callsLeaf(x) * 3 }

// sframeSelf opens the test binary and returns it with its load bias and
// its functions leafLoop, callsLeaf, outer and runtime.goexit. It skips
// unless the binary has an SFrame table (linux/amd64, a linker that writes
// one).
func sframeSelf(t testing.TB) (bin *gobin.Binary, bias uint64, leaf, mid, top, goexit *gobin.Func) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("synthetic stacks are laid out for linux/amd64")
	}
	outer(1)
	bin = gobintest.OpenSelf(t)
	if Table(bin) == nil {
		t.Skip("skipping: the test binary has no SFrame table (a linker that writes one is needed)")
	}
	const pkg = "fpsafe.dev/misc/internal/stack."
	leaf, mid, top = bin.LookupFunc(pkg+"leafLoop"), bin.LookupFunc(pkg+"callsLeaf"), bin.LookupFunc(pkg+"outer")
	goexit = bin.LookupFunc("runtime.goexit")
	if leaf == nil || mid == nil || top == nil || goexit == nil {
		t.Fatal("leafLoop, callsLeaf, outer or runtime.goexit not in the pclntab")
	}
	bias = uint64(reflect.ValueOf(leafLoop).Pointer()) - leaf.Entry
	return
}

// withoutTable makes Unwind see no table for bin until the test ends.
func withoutTable(t testing.TB, bin *gobin.Binary) {
	tab := Table(bin)
	bin.Replace(tableKey{}, (*sframe.Section)(nil))
	t.Cleanup(func() { bin.Replace(tableKey{}, tab) })
}

// instructions returns the link-time PCs of f's instructions.
func instructions(t testing.TB, bin *gobin.Binary, f *gobin.Func) []uint64 {
	code, err := bin.Code(f)
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil || f.SPDelta(f.Entry+uint64(off)) < 0 {
			break // padding after the last instruction
		}
		pcs = append(pcs, f.Entry+uint64(off))
		off += inst.Len
	}
	return pcs
}

// callReturn returns the return address of from's first call to to.
func callReturn(t testing.TB, bin *gobin.Binary, from, to *gobin.Func) uint64 {
	for _, pc := range instructions(t, bin, from) {
		code, _ := bin.Read(pc, 5)
		if len(code) == 5 && code[0] == 0xe8 && pc+5+uint64(int64(int32(binary.LittleEndian.Uint32(code[1:])))) == to.Entry {
			return pc + 5
		}
	}
	t.Fatalf("%s does not call %s", from.Name, to.Name)
	return 0
}

// frameFor lays out, in mem, the frame of a function that is stopped at a
// call whose return address is ret (link-time) and whose SP after the call
// returns is sp: its return address into caller, and its frame record
// holding callerFP. It returns the record's address.
func frameFor(mem fakeMem, f *gobin.Func, ret, sp, callerRet, callerFP uint64) uint64 {
	spd := uint64(f.SPDelta(ret - 1))
	mem.put(sp+spd, callerRet)
	mem.put(sp+spd-8, callerFP)
	return sp + spd - 8
}

// TestSFrameEveryPC stops a thread, in a synthetic stack, at every
// instruction of callsLeaf (prologue, body, calls, epilogue), called from
// outer, called from goexit. The frames are laid out from the pclntab's SP
// deltas and the code (independent of the SFrame table); the walk must be
// exactly the three frames at every PC, with the table and without it.
func TestSFrameEveryPC(t *testing.T) {
	bin, bias, _, mid, top, goexit := sframeSelf(t)
	retTop := callReturn(t, bin, top, mid)
	code, err := bin.Code(mid)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		n := 0
		for _, pc := range instructions(t, bin, mid) {
			const stackBase = 0x40000
			mem := fakeMem{stackBase: make([]byte, 0x1000)}
			sp := uint64(stackBase + 0x400)
			spd := uint64(mid.SPDelta(pc))
			mem.put(sp+spd, retTop+bias)
			topFP := frameFor(mem, top, retTop, sp+spd+8, goexit.Entry+1+bias, 0)
			fp := topFP
			if spd >= 8 {
				mem.put(sp+spd-8, topFP) // the saved BP, once pushed
			}
			// BP is set past the prologue's MOVQ SP, BP and until the
			// epilogue's POPQ BP; not in the stack-growth tail (SP delta 0)
			// that follows the body.
			if spd > 0 && fpchain.InFrameRecord(fpchain.Frame{Arch: "amd64", PC: pc, Entry: mid.Entry, Code: code}) {
				fp = sp + spd - 8
			}
			regs := target.Regs{PC: pc + bias, SP: sp, FP: fp}
			w := Unwind(mem, bin, bias, regs)
			want := []uint64{pc + bias, retTop + bias, goexit.Entry + 1 + bias}
			if !slices.Equal(w.PCs, want) || w.Stop != "" {
				t.Errorf("stopped at %s+%#x (SP delta %d): walk %#x (stop %q), want %#x", mid.Name, pc-mid.Entry, spd, w.PCs, w.Stop, want)
			}
			if tab := Table(bin); tab != nil {
				// The table alone gives the whole chain.
				w := Walk{PCs: []uint64{pc + bias}}
				if _, end := w.sframeSteps(mem, bin, tab, bias, regs); end != sframeDone || !slices.Equal(w.PCs, want) {
					t.Errorf("stopped at %s+%#x: the table's steps give %#x (end %d), want %#x to a root", mid.Name, pc-mid.Entry, w.PCs, end, want)
				}
			}
			n++
		}
		if n < 8 {
			t.Fatalf("only %d instructions in %s", n, mid.Name)
		}
	}
	t.Run("sframe", check)
	t.Run("framepointers", func(t *testing.T) {
		withoutTable(t, bin)
		check(t)
	})
}

// TestSFrameInjectedLeaf stops a thread in asyncPreempt, which the signal
// handler made the frameless leafLoop call (no call instruction; leafLoop's
// caller callsLeaf still owns the frame-pointer register). The table puts
// callsLeaf back; a frame-pointer walk skips it, since asyncPreempt's frame
// record links straight to callsLeaf's record, whose return address is
// callsLeaf's caller's.
func TestSFrameInjectedLeaf(t *testing.T) {
	bin, bias, mem, regs, pcL, retMid, goexit := injectedLeaf(t)
	pcA := regs.PC - bias
	w := Unwind(mem, bin, bias, regs)
	want := []uint64{pcA + bias, pcL + bias, retMid + bias, goexit.Entry + 1 + bias}
	if !slices.Equal(w.PCs, want) || w.Stop != "" {
		t.Fatalf("with the table: walk %#x (stop %q), want %#x", w.PCs, w.Stop, want)
	}

	withoutTable(t, bin)
	w = Unwind(mem, bin, bias, regs)
	want = []uint64{pcA + bias, pcL + bias, goexit.Entry + 1 + bias}
	if !slices.Equal(w.PCs, want) {
		t.Fatalf("by frame pointers: walk %#x (stop %q), want %#x (callsLeaf missing)", w.PCs, w.Stop, want)
	}
}

// injectedLeaf lays out the stack of TestSFrameInjectedLeaf.
func injectedLeaf(t testing.TB) (bin *gobin.Binary, bias uint64, mem fakeMem, regs target.Regs, pcL, retMid uint64, goexit *gobin.Func) {
	var leaf, mid *gobin.Func
	bin, bias, leaf, mid, _, goexit = sframeSelf(t)
	preempt := bin.LookupFunc("runtime.asyncPreempt")
	if preempt == nil {
		t.Fatal("runtime.asyncPreempt not in the pclntab")
	}
	// asyncPreempt past its prologue: the PC with the largest SP delta.
	var pcA uint64
	var spdA int32
	for _, pc := range instructions(t, bin, preempt) {
		if d := preempt.SPDelta(pc); d > spdA {
			pcA, spdA = pc, d
		}
	}
	// leafLoop interrupted in its loop, past its entry.
	leafPCs := instructions(t, bin, leaf)
	pcL = leafPCs[len(leafPCs)/2]
	retMid = callReturn(t, bin, mid, leaf)

	const stackBase = 0x40000
	mem = fakeMem{stackBase: make([]byte, 0x1000)}
	sp := uint64(stackBase + 0x200)
	spL := sp + uint64(spdA) + 8 // the leaf's SP when the signal came
	mem.put(spL-8, pcL+bias)     // the injected return address
	mem.put(spL, retMid+bias)    // the leaf's own return address
	midFP := frameFor(mem, mid, retMid, spL+8, goexit.Entry+1+bias, 0)
	mem.put(spL-16, midFP) // asyncPreempt saved the interrupted BP
	regs = target.Regs{PC: pcA + bias, SP: sp, FP: spL - 16}
	return
}

// BenchmarkUnwindInjectedLeaf times one walk of TestSFrameInjectedLeaf's
// stack (four frames), by the table and by frame pointers.
func BenchmarkUnwindInjectedLeaf(b *testing.B) {
	bin, bias, mem, regs, _, _, _ := injectedLeaf(b)
	b.Run("sframe", func(b *testing.B) {
		for b.Loop() {
			Unwind(mem, bin, bias, regs)
		}
	})
	b.Run("framepointers", func(b *testing.B) {
		withoutTable(b, bin)
		for b.Loop() {
			Unwind(mem, bin, bias, regs)
		}
	})
}
