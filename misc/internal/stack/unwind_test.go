package stack

import (
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/gobin/gobintest"
	"fpsafe.dev/misc/internal/target"
)

// fakeMem is a synthetic memory image: a few regions, everything else faults.
type fakeMem map[uint64][]byte

func (m fakeMem) ReadAt(p []byte, addr uint64) error {
	for base, b := range m {
		if addr >= base && addr+uint64(len(p)) <= base+uint64(len(b)) {
			copy(p, b[addr-base:])
			return nil
		}
	}
	return &target.FaultError{Addr: addr, Len: len(p), Err: errors.New("unmapped")}
}

func (m fakeMem) put(addr, v uint64) {
	for base, b := range m {
		if addr >= base && addr+8 <= base+uint64(len(b)) {
			binary.LittleEndian.PutUint64(b[addr-base:], v)
			return
		}
	}
	panic("put outside the image")
}

//go:noinline
func interrupted() int { return 1 }

// putInterrupted writes into the signal frame's registers at gregs a
// goroutine on the stack at goStack interrupted at the entry of self,
// which is frameless there (its return address, into goexit, is at its
// SP), and returns its PC and frame pointer.
func putInterrupted(mem fakeMem, gregs, goStack, bias uint64, self, goexit *gobin.Func) (rip, fp uint64) {
	sp := goStack + 0x200
	rip, fp = self.Entry+bias, goStack+0x300
	mem.put(gregs+amd64RBP, fp)
	mem.put(gregs+amd64RSP, sp)
	mem.put(gregs+amd64RIP, rip)
	mem.put(sp, goexit.Entry+1+bias)
	return rip, fp
}

// TestSignalFrame builds a signal handler's stack by hand: a frame record
// whose return address is in runtime.sigtramp and whose saved BP is zero
// (the fork's sigtramp ends the chain), the kernel's rt_sigframe at
// sigtramp's entry SP, and an interrupted Go function at a frameless PC. The
// walk must cross the signal frame and mark the interrupted PC as exact.
func TestSignalFrame(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("signal frame layout tested on linux/amd64 only")
	}
	bin := gobintest.OpenSelf(t)
	self := bin.LookupFunc("fpsafe.dev/misc/internal/stack.interrupted")
	if self == nil {
		t.Fatal("interrupted not in pclntab")
	}
	bias := uint64(reflect.ValueOf(interrupted).Pointer()) - self.Entry
	tramp := bin.LookupFunc("runtime.sigtramp")
	restorer := bin.LookupFunc(sigreturn)
	goexit := bin.LookupFunc("runtime.goexit")
	if tramp == nil || restorer == nil || goexit == nil {
		t.Fatal("runtime.sigtramp, sigreturn__sigaction or goexit missing")
	}
	// A return address in sigtramp: the first PC after entry with a positive
	// SP delta (past its register saves).
	var ret uint64
	var spd int32
	for pc := tramp.Entry + 1; pc < tramp.Entry+0x200; pc++ {
		if d := tramp.SPDelta(pc); d > 0 {
			ret, spd = pc+1, d
			break
		}
	}
	if ret == 0 {
		t.Fatal("no frame in runtime.sigtramp")
	}

	const sigStack, goStack = 0x10000, 0x80000
	mem := fakeMem{sigStack: make([]byte, 0x1000), goStack: make([]byte, 0x1000)}
	fp0 := uint64(sigStack + 0x100) // sigtrampgo's frame record
	mem.put(fp0, 0)                 // sigtramp zeroed BP
	mem.put(fp0+8, ret+bias)
	entrySP := fp0 + 16 + uint64(spd)
	mem.put(entrySP, restorer.Entry+bias) // pretcode
	gregs := entrySP + amd64Gregs
	rip, _ := putInterrupted(mem, gregs, goStack, bias, self, goexit)

	regs := target.Regs{PC: 0x1234, SP: fp0 - 0x40, FP: fp0} // in foreign code
	w := Unwind(mem, bin, bias, regs)
	want := []uint64{0x1234, ret + bias, rip, goexit.Entry + 1 + bias}
	if !reflect.DeepEqual(w.PCs, want) || w.Stop != "" {
		t.Fatalf("walk %#x (stop %q), want %#x", w.PCs, w.Stop, want)
	}
	if !reflect.DeepEqual(w.Signal, []int{2}) {
		t.Fatalf("Signal = %v, want [2]", w.Signal)
	}
	locs := SymbolizeWalk(bin, bias, w)
	var sig *Loc
	for i := range locs {
		if locs[i].Signal {
			sig = &locs[i]
		}
	}
	if sig == nil || sig.Func != self.Name || sig.Offset != 0 {
		t.Fatalf("signal frame not symbolized as the exact interrupted PC: %+v", locs)
	}

	// A sigtramp that was called, not entered by the kernel: the word at its
	// entry SP is a Go return address other than the restorer. The walk ends
	// at sigtramp as the frame-pointer chain does.
	mem.put(entrySP, self.Entry+4+bias)
	w = Unwind(mem, bin, bias, regs)
	if len(w.PCs) != 2 || len(w.Signal) != 0 {
		t.Fatalf("walk through a non-kernel sigtramp: %#x signal %v", w.PCs, w.Signal)
	}

	// An implausible interrupted SP (unmapped) is rejected too.
	mem.put(entrySP, restorer.Entry+bias)
	mem.put(gregs+amd64RSP, 0x7000000)
	w = Unwind(mem, bin, bias, regs)
	if len(w.PCs) != 2 || len(w.Signal) != 0 {
		t.Fatalf("walk with unmapped interrupted SP: %#x signal %v", w.PCs, w.Signal)
	}
}

// TestSigreturnLeaf stops a thread in the runtime's signal restorer, after
// the handler returned: SP is at the kernel frame's ucontext, whose first
// word (uc_flags, 7) is no return address. The walk must go on from the
// interrupted registers; where the interrupted stack is not readable (the
// eBPF collector copies only the words above SP) it must stop, and the
// kernel's frame-pointer walk must be left as it is.
func TestSigreturnLeaf(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("signal frame layout tested on linux/amd64 only")
	}
	bin := gobintest.OpenSelf(t)
	self := bin.LookupFunc("fpsafe.dev/misc/internal/stack.interrupted")
	restorer := bin.LookupFunc(sigreturn)
	goexit := bin.LookupFunc("runtime.goexit")
	if self == nil || restorer == nil || goexit == nil {
		t.Fatal("interrupted, sigreturn__sigaction or goexit missing")
	}
	bias := uint64(reflect.ValueOf(interrupted).Pointer()) - self.Entry
	const sigStack, goStack = 0x10000, 0x80000
	mem := fakeMem{sigStack: make([]byte, 0x1000), goStack: make([]byte, 0x1000)}
	sp := uint64(sigStack + 0x200)
	mem.put(sp, 7) // uc_flags
	gregs := sp - 8 + amd64Gregs
	rip, fp1 := putInterrupted(mem, gregs, goStack, bias, self, goexit)
	pc := restorer.Entry + 7 + bias // after MOVL $15, AX
	regs := target.Regs{PC: pc, SP: sp, FP: fp1}

	w := Unwind(mem, bin, bias, regs)
	want := []uint64{pc, rip, goexit.Entry + 1 + bias}
	if !reflect.DeepEqual(w.PCs, want) || !reflect.DeepEqual(w.Signal, []int{1}) {
		t.Fatalf("walk %#x signal %v (stop %q), want %#x signal [1]", w.PCs, w.Signal, w.Stop, want)
	}

	// The eBPF collector's copy: the words above SP only.
	words := make([]uint64, 64)
	for i := range words {
		var b [8]byte
		if mem.ReadAt(b[:], sp+8*uint64(i)) == nil {
			words[i] = binary.LittleEndian.Uint64(b[:])
		}
	}
	w = Unwind(wordMem{base: sp, words: words}, bin, bias, regs)
	if len(w.PCs) != 1 || w.Stop == "" {
		t.Fatalf("walk over the copied words: %#x (stop %q), want the restorer alone and a reason", w.PCs, w.Stop)
	}
	kernel := []uint64{pc, goexit.Entry + 1 + bias}
	if got := RepairKernelWalk(bin, bias, regs, words, kernel); !reflect.DeepEqual(got, kernel) {
		t.Fatalf("RepairKernelWalk(%#x) = %#x, want it unchanged", kernel, got)
	}
}

// TestUnwindFromEntry walks a goroutine that has not run yet, as newproc
// leaves it: resumed at its start function's entry, with the return
// address goexit+1 at its SP and no frame pointer. Its frames are the
// function and goexit.
func TestUnwindFromEntry(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("a fresh goroutine's return address is at its SP on amd64 only (arm64 keeps it in LR)")
	}
	bin := gobintest.OpenSelf(t)
	self := bin.LookupFunc("fpsafe.dev/misc/internal/stack.interrupted")
	goexit := bin.LookupFunc("runtime.goexit")
	if self == nil || goexit == nil {
		t.Fatal("interrupted or runtime.goexit not in pclntab")
	}
	bias := uint64(reflect.ValueOf(interrupted).Pointer()) - self.Entry
	const goStack = 0x80000
	mem := fakeMem{goStack: make([]byte, 0x1000)}
	sp := uint64(goStack + 0xff8)
	mem.put(sp, goexit.Entry+1+bias)
	w := Unwind(mem, bin, bias, target.Regs{PC: self.Entry + bias, SP: sp})
	if want := []uint64{self.Entry + bias, goexit.Entry + 1 + bias}; !reflect.DeepEqual(w.PCs, want) || w.Stop != "" {
		t.Fatalf("walk %#x (stop %q), want %#x", w.PCs, w.Stop, want)
	}
}
