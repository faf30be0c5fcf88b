package perfcheck

import (
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"fpsafe.dev/misc/internal/gobin"
)

// symbolizer resolves frames of Go binaries through their pclntab.
type symbolizer struct {
	bins map[string]*gobin.Binary // nil value: not a Go binary
}

func newSymbolizer() *symbolizer { return &symbolizer{bins: map[string]*gobin.Binary{}} }

func (s *symbolizer) binary(dso string) *gobin.Binary {
	if b, ok := s.bins[dso]; ok {
		return b
	}
	b, err := gobin.Open(dso)
	if err != nil {
		b = nil
	}
	s.bins[dso] = b
	return b
}

// vaddr converts perf's DSO-relative address (a file offset) to a virtual
// address of b; an address that already lies in a segment is kept.
func vaddr(b *gobin.Binary, a uint64) (uint64, bool) {
	if va, ok := b.CodeAddr(a); ok {
		return va, true
	}
	return a, b.FileBacked(a)
}

// resolve symbolizes f. ret says f is a return address; injected says the
// frame below it was entered by an injected call (asyncPreempt, sigpanic),
// whose return address is the interrupted PC, not a call site.
func (s *symbolizer) resolve(f Frame, ret, injected bool) resolved {
	if b := s.binary(f.DSO); b != nil {
		va, ok := vaddr(b, f.Addr)
		if ok {
			pc := va
			if ret {
				pc-- // a return address may be just past the end of its function
			}
			if fn := b.FindFunc(pc); fn != nil {
				r := resolved{name: fn.Name, goCode: true, retOK: true, off: va - fn.Entry}
				if !ret {
					r.noFrame = leafWithoutFrame(b, fn, va)
				}
				if ret && !injected {
					r.retOK = afterCall(b, va) || runtimeMarker(b, fn, va)
				}
				return r
			}
		}
		// Non-Go code linked into a Go binary (cgo's C): perf's symbol.
	}
	if f.Sym != "" && f.Sym != "[unknown]" {
		name := f.Sym
		if i := lastPlus(name); i > 0 {
			name = name[:i]
		}
		return resolved{name: name}
	}
	return resolved{}
}

// runtimeMarker reports whether va is one of the return addresses the
// runtime plants without a call: gogo makes goexit+PCQuantum the return
// address of a goroutine's first frame, and gosave_systemstack_switch saves
// systemstack_switch+8 as the PC of a goroutine that switched to g0 (for
// asmcgocall), which cgocallback's frame record links to.
func runtimeMarker(b *gobin.Binary, fn *gobin.Func, va uint64) bool {
	q := uint64(1)
	if b.Arch == "arm64" {
		q = 4
	}
	switch fn.Name {
	case "runtime.goexit":
		return va == fn.Entry+q
	case "runtime.systemstack_switch":
		return va == fn.Entry+8
	}
	return false
}

func lastPlus(s string) int {
	for i := len(s) - 1; i > 0; i-- {
		if s[i] == '+' {
			return i
		}
	}
	return -1
}

// afterCall reports whether the instruction ending at pc is a call.
func afterCall(b *gobin.Binary, pc uint64) bool {
	if b.Arch == "arm64" {
		code, err := b.Read(pc-4, 4)
		if err != nil {
			return false
		}
		inst, err := arm64asm.Decode(code)
		if err != nil {
			return false
		}
		op := inst.Op.String()
		return op == "BL" || op == "BLR"
	}
	for n := uint64(2); n <= 7; n++ {
		code, err := b.Read(pc-n, n)
		if err != nil {
			continue
		}
		inst, err := x86asm.Decode(code, 64)
		if err == nil && uint64(inst.Len) == n && inst.Op == x86asm.CALL {
			return true
		}
	}
	return false
}

// leafWithoutFrame reports whether, at pc in Go function fn, the function has
// no frame record of its own (a frameless function, the prologue before the
// frame pointer is set, or a return after it is restored). Then a
// frame-pointer unwinder sees the caller's frame pointer, and for a
// goroutine's first function that is the zero gogo installs: the chain ends
// at the leaf, correctly, without goexit.
func leafWithoutFrame(b *gobin.Binary, fn *gobin.Func, pc uint64) bool {
	code, err := b.Code(fn)
	if err != nil {
		return false
	}
	setup := uint64(0) // offset just after the frame-pointer setup
	for off, n := 0, 0; off < len(code) && n < 12; n++ {
		var size int
		var isSetup bool
		if b.Arch == "arm64" {
			inst, err := arm64asm.Decode(code[off:])
			size = 4
			if err == nil {
				s := inst.String()
				// SUB $8, RSP, R29 (or ADD / MOV from SP into R29).
				isSetup = (inst.Op == arm64asm.SUB || inst.Op == arm64asm.ADD || inst.Op == arm64asm.MOV) && strings.HasPrefix(s, inst.Op.String()+" X29, SP")
			}
		} else {
			inst, err := x86asm.Decode(code[off:], 64)
			if err != nil {
				break
			}
			size = inst.Len
			isSetup = inst.Op == x86asm.MOV && inst.Args[0] == x86asm.RBP && inst.Args[1] == x86asm.RSP ||
				inst.Op == x86asm.LEA && inst.Args[0] == x86asm.RBP
		}
		off += size
		if isSetup {
			setup = uint64(off)
			break
		}
	}
	if setup == 0 || pc < fn.Entry+setup {
		return true
	}
	// At a return, after the epilogue restored the caller's frame pointer.
	at, err := b.Read(pc, 4)
	if err != nil {
		return false
	}
	if b.Arch == "arm64" {
		inst, err := arm64asm.Decode(at)
		return err == nil && inst.Op == arm64asm.RET
	}
	inst, err := x86asm.Decode(at, 64)
	return err == nil && inst.Op == x86asm.RET
}
