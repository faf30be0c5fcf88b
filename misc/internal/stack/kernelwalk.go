package stack

import (
	"errors"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/target"
)

// RepairKernelWalk completes a frame-pointer walk that a kernel-side
// sampler (a BPF program, perf) took of a running thread: pcs starts at the
// sampled PC and goes on from BP, so a thread sampled in a frameless
// function or a prologue misses its caller. words are the stack words the
// sampler copied from regs.SP upward. Unwind's innermost-frame logic runs
// over them, and where it finds a caller that the walk lacks, that caller
// is spliced in after the first frame. A walk that does not start at
// regs.PC (registers and walk taken apart) is returned as it is.
func RepairKernelWalk(bin *gobin.Binary, bias uint64, regs target.Regs, words, pcs []uint64) []uint64 {
	if len(pcs) == 0 || pcs[0] != regs.PC {
		return pcs
	}
	mem := wordMem{base: regs.SP, words: words}
	w := Unwind(mem, bin, bias, target.Regs{PC: regs.PC, SP: regs.SP, FP: 0})
	if len(w.PCs) >= 2 && (len(pcs) < 2 || pcs[1] != w.PCs[1]) && !bpInFrame(bin, bias, regs) {
		pcs = append([]uint64{pcs[0], w.PCs[1]}, pcs[1:]...)
	}
	return pcs
}

// bpInFrame reports whether BP already points at the innermost frame's saved
// BP (then the kernel's walk is complete).
func bpInFrame(bin *gobin.Binary, bias uint64, r target.Regs) bool {
	f := bin.FindFunc(r.PC - bias)
	if f == nil {
		return true
	}
	spd := f.SPDelta(r.PC - bias)
	if f.SPWrite() && spd > 0 {
		// Past its prologue a function that writes SP (time.now,
		// runtime.mcall and systemstack switch to the system stack) may
		// run on another stack: SP says nothing of its frame, BP does
		// (its prologue set it before the switch).
		return true
	}
	// spd 0: nothing pushed yet (or a frameless function), BP is the caller's.
	return spd < 0 || fpchain.InFrameRecord(fpchain.Frame{Arch: bin.Arch, PC: r.PC - bias, HaveRegs: true, SPDelta: spd, SP: r.SP, FP: r.FP})
}

// wordMem serves reads from the words copied above SP.
type wordMem struct {
	base  uint64
	words []uint64
}

func (m wordMem) ReadAt(p []byte, addr uint64) error {
	if addr < m.base || addr+uint64(len(p)) > m.base+8*uint64(len(m.words)) || addr%8 != 0 || len(p) != 8 {
		return &target.FaultError{Addr: addr, Len: len(p), Err: errors.New("not copied by the sampler")}
	}
	v := m.words[(addr-m.base)/8]
	for i := range p {
		p[i] = byte(v >> (8 * i))
	}
	return nil
}
