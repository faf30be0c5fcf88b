// Package stack unwinds a stopped thread by frame pointers through the
// target's memory and formats the result as a Go traceback.
//
// Only the innermost frame needs more than the frame-pointer chain: the thread
// may be stopped in a prologue or epilogue, or in an assembly function without
// a frame, where BP still (or again) holds the caller's frame pointer. For a Go
// function the pclntab's SP-delta table says where the return address is at
// that PC; whether BP already points into this frame follows from whether it
// equals the slot just below that return address. Every outer frame is then a
// plain frame-pointer walk, as the runtime's own fpTracebackPCs does.
package stack

import (
	"fpsafe/golineage/internal/gobin"
	"fpsafe/golineage/internal/target"
)

// MaxDepth bounds a walk (a corrupt chain must not loop forever).
const MaxDepth = 1024

// Walk is the result of unwinding one thread.
type Walk struct {
	PCs []uint64 // runtime PCs: PCs[0] is the stopped PC, the rest return addresses
	// Stop explains why the walk ended early ("" when it reached a root or a
	// zero frame pointer).
	Stop string
}

// Unwind walks the frame-pointer chain of one thread. bias is the load bias
// (runtime address minus link-time address) of the executable.
func Unwind(mem target.Mem, bin *gobin.Binary, bias uint64, regs target.Regs) Walk {
	var w Walk
	pc, fp := regs.PC, regs.FP
	if pc == 0 {
		w.Stop = "zero PC"
		return w
	}
	w.PCs = append(w.PCs, pc)
	if isRoot(bin, pc-bias) {
		return w
	}
	// Innermost frame.
	if f := bin.FindFunc(pc - bias); f != nil {
		if spd := f.SPDelta(pc - bias); spd >= 0 {
			var ret uint64
			var slot uint64
			switch bin.Arch {
			case "arm64":
				if spd == 0 {
					ret, slot = regs.LR, regs.SP-8
				} else {
					slot = regs.SP
					r, err := target.Word(mem, slot)
					if err != nil {
						w.Stop = err.Error()
						return w
					}
					ret = r
					slot = regs.SP - 8 // where this frame's saved FP lives
				}
			default:
				slot = regs.SP + uint64(spd)
				r, err := target.Word(mem, slot)
				if err != nil {
					w.Stop = err.Error()
					return w
				}
				ret = r
				slot -= 8
			}
			if fp == slot && spd > 0 {
				// BP points at this frame's saved BP: step over it.
				next, err := target.Word(mem, fp)
				if err != nil {
					w.Stop = err.Error()
					return w
				}
				fp = next
			}
			if ret == 0 {
				return w
			}
			w.PCs = append(w.PCs, ret)
			if isRoot(bin, ret-1-bias) {
				return w
			}
		}
	}
	seen := map[uint64]bool{}
	for len(w.PCs) < MaxDepth {
		if fp == 0 {
			return w
		}
		if fp%8 != 0 {
			w.Stop = "misaligned frame pointer"
			return w
		}
		if seen[fp] {
			w.Stop = "frame pointer loop"
			return w
		}
		seen[fp] = true
		var buf [16]byte
		if err := mem.ReadAt(buf[:], fp); err != nil {
			w.Stop = err.Error()
			return w
		}
		next := le64(buf[:8])
		ret := le64(buf[8:])
		if ret == 0 {
			return w
		}
		w.PCs = append(w.PCs, ret)
		if isRoot(bin, ret-1-bias) {
			return w
		}
		fp = next
	}
	w.Stop = "depth limit"
	return w
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Roots end a thread's or a goroutine's stack. They are matched by name,
// which is stable across releases (abi.FuncID values are not).
var roots = []string{"runtime.goexit", "runtime.mstart", "runtime.rt0_go"}

func isRoot(bin *gobin.Binary, pc uint64) bool {
	for _, r := range roots {
		if bin.FuncNameIs(pc, r) {
			return true
		}
	}
	return false
}
