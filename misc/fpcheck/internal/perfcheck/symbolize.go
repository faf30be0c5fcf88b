package perfcheck

import (
	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"fpsafe.dev/misc/internal/fpchain"
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
					r.retOK = afterCall(b, va) || fpchain.IsReturnMarker(b.Arch, fn.Name, va-fn.Entry)
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

// leafWithoutFrame reports whether, at pc in Go function fn, the function
// has no frame record of its own. Then a frame-pointer unwinder sees the
// caller's frame pointer, and for a goroutine's first function that is the
// zero gogo installs: the chain ends at the leaf, correctly, without goexit.
func leafWithoutFrame(b *gobin.Binary, fn *gobin.Func, pc uint64) bool {
	code, err := b.Code(fn)
	if err != nil {
		return false
	}
	return !fpchain.InFrameRecord(fpchain.Frame{Arch: b.Arch, PC: pc, Entry: fn.Entry, Code: code})
}
