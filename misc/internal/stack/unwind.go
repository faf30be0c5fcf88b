// Package stack unwinds a stopped thread through the target's memory, by
// the binary's SFrame table where it has one (sframe.go) and by frame
// pointers elsewhere, and formats the result as a Go traceback.
//
// Where the table has no rule (or there is no table), only the innermost
// frame needs more than the frame-pointer chain: the thread may be stopped in
// a prologue or epilogue, or in an assembly function without a frame, where
// BP still (or again) holds the caller's frame pointer. For a Go function the
// pclntab's SP-delta table says where the return address is at that PC;
// whether BP already points into this frame follows from whether it holds
// the address of the frame's record (fpchain.InFrameRecord). Every outer
// frame is then a plain frame-pointer walk, as the runtime's own
// fpTracebackPCs does.
package stack

import (
	"encoding/binary"
	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/target"
)

// MaxDepth bounds a walk (a corrupt chain must not loop forever).
const MaxDepth = 1024

// Walk is the result of unwinding one thread.
type Walk struct {
	PCs []uint64 // runtime PCs: PCs[0] is the stopped PC, the rest return addresses
	// Stop explains why the walk ended early ("" when it reached a root or a
	// zero frame pointer).
	Stop string
	// Signal lists the indices in PCs of interrupted PCs recovered from a
	// kernel signal frame: they are exact PCs, not return addresses, and
	// the frames from there on ran before the signal arrived.
	Signal []int
}

// AppendKey appends to key bytes that identify w's frames: two walks with
// equal keys have equal PCs and signal frames.
func (w *Walk) AppendKey(key []byte) []byte {
	for _, pc := range w.PCs {
		key = binary.LittleEndian.AppendUint64(key, pc)
	}
	key = binary.LittleEndian.AppendUint64(key, ^uint64(0))
	for _, i := range w.Signal {
		key = binary.LittleEndian.AppendUint64(key, uint64(i))
	}
	return binary.LittleEndian.AppendUint64(key, ^uint64(0))
}

// IsSignal reports whether PCs[i] is an interrupted PC from a signal frame.
func (w Walk) IsSignal(i int) bool {
	for _, j := range w.Signal {
		if j == i {
			return true
		}
	}
	return false
}

// Unwind walks the stack of one thread, by SFrame rules where the binary's
// table has them and by the frame-pointer chain elsewhere. bias is the load bias
// (runtime address minus link-time address) of the executable.
func Unwind(mem target.Mem, bin *gobin.Binary, bias uint64, regs target.Regs) Walk {
	w := Walk{PCs: make([]uint64, 0, 32)}
	w.Unwind(mem, bin, bias, regs)
	return w
}

// Unwind is the function Unwind into w, reusing its slices: a caller that
// walks many stacks and keeps few distinct results walks into one Walk
// and copies what it keeps.
func (w *Walk) Unwind(mem target.Mem, bin *gobin.Binary, bias uint64, regs target.Regs) {
	w.PCs, w.Stop, w.Signal = w.PCs[:0], "", w.Signal[:0]
	for sigs := 0; ; sigs++ {
		next, ok := w.walk(mem, bin, bias, regs)
		if !ok || sigs >= maxSignalFrames {
			return
		}
		w.Signal = append(w.Signal, len(w.PCs))
		regs = next
	}
}

// maxSignalFrames bounds how many nested signal frames one walk crosses.
const maxSignalFrames = 16

// walk appends the frames from regs to w. If the walk reaches the runtime's
// signal trampoline and a valid kernel signal frame is found above it, walk
// returns the interrupted registers and true: the caller continues from
// there (as gdb does across a signal frame).
func (w *Walk) walk(mem target.Mem, bin *gobin.Binary, bias uint64, regs target.Regs) (target.Regs, bool) {
	var none target.Regs
	pc, fp := regs.PC, regs.FP
	start := len(w.PCs) // index of this segment's exact PC
	if pc == 0 {
		w.Stop = "zero PC"
		return none, false
	}
	w.PCs = append(w.PCs, pc)
	if isRoot(bin, pc-bias) {
		return none, false
	}
	if start == 0 && factsOf(bin, pc-bias).sigreturn {
		// Stopped in the restorer: the handler has returned, its RET took
		// the signal frame's pretcode, and SP is at the ucontext that
		// holds the interrupted registers. The word at SP is no return
		// address (it is uc_flags).
		if next, ok := sigContextAt(mem, bin, regs.SP-8); ok {
			return next, true
		}
		w.Stop = "in the signal restorer, without its signal frame"
		return none, false
	}
	inner := true
	if tab := Table(bin); tab != nil {
		next, end := w.sframeSteps(mem, bin, tab, bias, regs)
		switch end {
		case sframeDone:
			return none, false
		case sframeSignal:
			return next, true
		}
		inner = len(w.PCs) == start+1
		fp = next.FP
	}
	// Innermost frame.
	if f := bin.FindFunc(pc - bias); inner && f != nil {
		if spd := f.SPDelta(pc - bias); spd >= 0 {
			var ret uint64
			switch bin.Arch {
			case "arm64":
				if spd == 0 {
					ret = regs.LR
				} else {
					r, err := target.Word(mem, regs.SP)
					if err != nil {
						w.Stop = err.Error()
						return none, false
					}
					ret = r
				}
			default:
				r, err := target.Word(mem, regs.SP+uint64(spd))
				if err != nil {
					w.Stop = err.Error()
					return none, false
				}
				ret = r
			}
			if fpchain.InFrameRecord(fpchain.Frame{Arch: bin.Arch, PC: pc - bias, HaveRegs: true, SPDelta: spd, SP: regs.SP, FP: fp}) {
				// BP points at this frame's saved BP: step over it.
				next, err := target.Word(mem, fp)
				if err != nil {
					w.Stop = err.Error()
					return none, false
				}
				fp = next
			}
			if ret == 0 {
				return none, false
			}
			w.PCs = append(w.PCs, ret)
			if isRoot(bin, ret-1-bias) {
				return none, false
			}
			// The SP of ret's frame just after its call returns.
			var callerSP uint64
			if bin.Arch == "arm64" {
				callerSP = regs.SP + uint64(spd)
			} else {
				callerSP = regs.SP + uint64(spd) + 8
			}
			if next, ok := signalFrame(mem, bin, bias, ret, callerSP); ok {
				return next, true
			}
		}
	}
	seen := map[uint64]bool{}
	for len(w.PCs) < MaxDepth {
		if fp == 0 {
			return none, false
		}
		if fp%8 != 0 {
			w.Stop = "misaligned frame pointer"
			return none, false
		}
		if seen[fp] {
			w.Stop = "frame pointer loop"
			return none, false
		}
		seen[fp] = true
		next, ret, err := frameRecord(mem, fp)
		if err != nil {
			w.Stop = err.Error()
			return none, false
		}
		if ret == 0 {
			return none, false
		}
		w.PCs = append(w.PCs, ret)
		f := factsOf(bin, ret-1-bias)
		if f.root {
			return none, false
		}
		if f.signal {
			// The callee's frame record is at fp; the caller's SP after the
			// call is just above the return address (amd64), or the callee's
			// entry SP (arm64, where the record sits at the bottom of the
			// callee's frame).
			callerSP, ok := fp+16, true
			if bin.Arch == "arm64" {
				ok = false
				prev := w.PCs[len(w.PCs)-2]
				if len(w.PCs)-2 != start {
					prev-- // a return address, not this segment's exact PC
				}
				if f := bin.FindFunc(prev - bias); f != nil {
					if spd := f.SPDelta(prev - bias); spd >= 0 {
						callerSP, ok = fp+8+uint64(spd), true
					}
				}
			}
			if ok {
				if regs, ok := signalFrame(mem, bin, bias, ret, callerSP); ok {
					return regs, true
				}
			}
		}
		fp = next
	}
	w.Stop = "depth limit"
	return none, false
}

// frameRecord reads the frame record at fp: the saved frame pointer and
// the return address.
func frameRecord(mem target.Mem, fp uint64) (next, ret uint64, err error) {
	if wm, ok := mem.(target.WordMem); ok {
		if next, err = wm.Word(fp); err == nil {
			ret, err = wm.Word(fp + 8)
		}
		return next, ret, err
	}
	var buf [16]byte
	if err := mem.ReadAt(buf[:], fp); err != nil {
		return 0, 0, err
	}
	return le64(buf[:8]), le64(buf[8:]), nil
}

// le64 decodes a little-endian word.
var le64 = binary.LittleEndian.Uint64

// isRoot reports whether pc is in a function that ends a thread's or a
// goroutine's stack. Roots are matched by name, which is stable across
// releases (abi.FuncID values are not).
func isRoot(bin *gobin.Binary, pc uint64) bool { return factsOf(bin, pc).root }

func isRootUncached(bin *gobin.Binary, pc uint64) bool {
	for _, r := range fpchain.StackRoots {
		if bin.FuncNameIs(pc, r) {
			return true
		}
	}
	return false
}

// sigreturn is the sa_restorer the runtime installs: the kernel's signal
// frame begins with a return address into it (amd64).
const sigreturn = "runtime.sigreturn__sigaction"

func isSignalPCUncached(bin *gobin.Binary, pc uint64) bool {
	for _, n := range fpchain.SignalEntries {
		if bin.FuncNameIs(pc, n) {
			return true
		}
	}
	return bin.Arch != "arm64" && bin.FuncNameIs(pc, sigreturn)
}

// signalFrame locates the kernel's rt_sigframe for a walk that reached the
// return address ret in a signal trampoline, whose SP just after that call
// was callerSP, and returns the interrupted registers from its ucontext.
// ok is false when ret is not in a trampoline or the frame does not look
// like one the kernel built.
func signalFrame(mem target.Mem, bin *gobin.Binary, bias, ret, callerSP uint64) (target.Regs, bool) {
	var none target.Regs
	rpc := ret - 1 - bias
	f := factsOf(bin, rpc)
	var entrySP uint64
	switch {
	case f.sigreturn:
		// ret is the frame's pretcode itself.
		entrySP = callerSP - 8
	case f.signal:
		f := bin.FindFunc(rpc)
		if f == nil {
			return none, false
		}
		spd := f.SPDelta(rpc)
		if spd < 0 {
			return none, false
		}
		entrySP = callerSP + uint64(spd)
	default:
		return none, false
	}
	return SigContext(mem, bin, bias, entrySP)
}

// Offsets into the kernel's rt_sigframe (arch/*/kernel/signal.c, uapi
// ucontext and sigcontext), from the SP the handler was entered with.
const (
	// amd64: {pretcode u64; ucontext {uc_flags, uc_link, uc_stack[24],
	// mcontext gregs r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip}}.
	amd64Gregs = 8 + 40
	amd64RBP   = 10 * 8
	amd64RSP   = 15 * 8
	amd64RIP   = 16 * 8
	// arm64: {siginfo [128]; ucontext {uc_flags, uc_link, uc_stack[24],
	// uc_sigmask padded to 128, mcontext (16-aligned) {fault_address,
	// regs[31], sp, pc, pstate}}}.
	arm64Regs = 128 + 176 + 8
)

// SigContext reads the interrupted registers from the kernel signal frame
// that starts at entrySP (the SP the handler was entered with) and checks
// that they are plausible: a canonical non-zero PC, inside the executable's
// Go text or, for foreign code, with a readable aligned SP.
func SigContext(mem target.Mem, bin *gobin.Binary, bias, entrySP uint64) (target.Regs, bool) {
	if bin.Arch != "arm64" {
		// The frame's pretcode is the handler's return address: if it is
		// in Go code at all, it must be the runtime's restorer (else this
		// trampoline was called, not entered by the kernel).
		pret, err := target.Word(mem, entrySP)
		if err != nil || pret == 0 {
			return target.Regs{}, false
		}
		if bin.FindFunc(pret-bias) != nil && !bin.FuncNameIs(pret-bias, sigreturn) {
			return target.Regs{}, false
		}
	}
	return sigContextAt(mem, bin, entrySP)
}

// sigContextAt is SigContext without the check of the amd64 frame's
// pretcode, which a handler that has returned no longer has.
func sigContextAt(mem target.Mem, bin *gobin.Binary, entrySP uint64) (target.Regs, bool) {
	var r target.Regs
	var limit uint64
	switch bin.Arch {
	case "arm64":
		var b [34 * 8]byte
		if mem.ReadAt(b[:], entrySP+arm64Regs) != nil {
			return r, false
		}
		r.FP = le64(b[29*8:])
		r.LR = le64(b[30*8:])
		r.SP = le64(b[31*8:])
		r.PC = le64(b[32*8:])
		limit = 1 << 56
	default:
		var b [17 * 8]byte
		if mem.ReadAt(b[:], entrySP+amd64Gregs) != nil {
			return r, false
		}
		r.FP = le64(b[amd64RBP:])
		r.SP = le64(b[amd64RSP:])
		r.PC = le64(b[amd64RIP:])
		limit = 1 << 47
	}
	if r.PC == 0 || r.PC >= limit || r.SP == 0 || r.SP%8 != 0 {
		return r, false
	}
	if _, err := target.Word(mem, r.SP); err != nil {
		return r, false
	}
	return r, true
}
