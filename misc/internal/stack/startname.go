package stack

import (
	"fmt"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"fpsafe.dev/misc/internal/gobin"
)

// A goroutine is named by the function its go statement names. Its start
// PC (g.startpc, and the start PCs of its ancestor entries) is often not
// that function but a wrapper the compiler made: "go f(x)" in F starts
// F.gowrapN (main.handler.gowrap1), which calls f(x) with the arguments
// saved in its closure, and a method value starts T.m-fm, which calls
// T.m. The runtime's own dump leaves the wrappers out, so its outermost
// frame is f; ps, tree and waits name the goroutine so too, by looking
// into the wrapper (StartNamer.resolve):
//
//   - a function that is not a wrapper is its own name: "go func(){...}()"
//     starts main.main.func1, and a closure that calls a function value
//     (nats-server's startGoRoutine.func1, which runs the f it was given)
//     keeps its own name, since what it calls is not in the code;
//   - a wrapper whose call was inlined names the function its inline tree
//     says was inlined into its own body;
//   - otherwise its machine code is decoded, and the first call made from
//     its own body that is not to a runtime helper (runtime.morestack and
//     the like: any runtime function, unless the wrapper is the runtime's
//     own) names it, if it is a direct call; a call through a register
//     (go fn(x) with fn a function value, or an interface method) leaves
//     the wrapper's name.
//
// A wrapper may call another (a pointer method wrapper around a value
// method), so the rule is applied again to the function found, a few
// times at most. The answers are cached per binary and PC.

// FuncLine is a function and a source line (its func keyword's, or a
// call's).
type FuncLine struct {
	Func string `json:"func"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// StartName is what a start PC names.
type StartName struct {
	Fn      FuncLine  // the function the go statement names
	Wrapper *FuncLine // the compiler's wrapper the goroutine starts in, if any
	// Entry is the link-time entry of Fn's function; 0 if Fn was inlined
	// into the wrapper (it has no code of its own).
	Entry uint64
	// Unresolved: the goroutine starts in a wrapper whose callee the code
	// does not show (a call through a register); Fn names the wrapper.
	Unresolved bool
}

// maxWrapperDepth bounds the walk through wrappers calling wrappers.
const maxWrapperDepth = 4

// StartNamer resolves start PCs of one binary, caching the answers.
type StartNamer struct {
	bin   *gobin.Binary
	bias  uint64
	cache map[uint64]*StartName
}

// NewStartNamer returns a namer of bin's start PCs at load bias bias.
func NewStartNamer(bin *gobin.Binary, bias uint64) *StartNamer {
	return &StartNamer{bin: bin, bias: bias, cache: map[uint64]*StartName{}}
}

// Name resolves the runtime PC pc (a goroutine's start PC). The answer is
// shared: callers must not change it.
func (n *StartNamer) Name(pc uint64) *StartName {
	if sn, ok := n.cache[pc]; ok {
		return sn
	}
	sn := n.resolve(pc)
	n.cache[pc] = &sn
	return &sn
}

func (n *StartNamer) resolve(pc uint64) StartName {
	f := n.bin.FindFunc(pc - n.bias)
	if f == nil {
		return StartName{Fn: FuncLine{Func: fmt.Sprintf("?? pc=%#x", pc)}}
	}
	outer := EntryFrame(f)
	sn := StartName{Fn: outer, Entry: f.Entry}
	for range maxWrapperDepth {
		if !IsWrapper(f) {
			break
		}
		fr, next := resolveWrapper(n.bin, f)
		if fr == nil {
			sn.Unresolved = true
			break
		}
		sn.Fn, sn.Wrapper, sn.Entry = *fr, &outer, 0
		if next == nil {
			break // inlined: no code of its own to look into
		}
		f = next
		sn.Entry = f.Entry
	}
	return sn
}

// FromStack names the start of one goroutine that Name leaves unresolved
// (a wrapper that calls the function through a register: "go f(x)" with f
// a function value) from its stack, once it has run: its outermost frame
// below runtime.goexit and the wrapper itself (present or elided) is the
// function the go statement named. The answer holds for that goroutine
// only (another goroutine started by the same wrapper may call another
// function), so it is not cached. It is nil if the stack does not say.
func (n *StartNamer) FromStack(pc uint64, frames []Loc) *StartName {
	sn := n.Name(pc)
	if !sn.Unresolved {
		return nil
	}
	i := len(frames) - 1
	for i >= 0 && (frames[i].Func == "runtime.goexit" || frames[i].Wrapper || frames[i].Func == sn.Fn.Func) {
		i--
	}
	if i < 0 || frames[i].Inlined || frames[i].Func == "" || inRuntime(frames[i].Func) {
		return nil
	}
	f := n.bin.FindFunc(frames[i].PC - n.bias)
	if f == nil {
		return nil
	}
	wrapper := sn.Fn
	return &StartName{Fn: EntryFrame(f), Wrapper: &wrapper, Entry: f.Entry}
}

// EntryFrame is f at its entry: its name as tracebacks print it and the
// line of its func keyword.
func EntryFrame(f *gobin.Func) FuncLine {
	file, line := f.FileLine(f.Entry)
	return FuncLine{Func: gobin.PrintName(f.Name), File: file, Line: line}
}

// IsWrapper reports whether f is compiler-generated code that calls the
// function a go statement names: by its function ID, and by its name for
// binaries of other releases, whose IDs differ.
func IsWrapper(f *gobin.Func) bool {
	if f.FuncID == gobin.FuncIDWrapper {
		return true
	}
	if strings.HasSuffix(f.Name, "-fm") {
		return true
	}
	i := strings.LastIndex(f.Name, ".gowrap")
	return i >= 0 && strings.Trim(f.Name[i+len(".gowrap"):], "0123456789") == ""
}

// inRuntime reports whether name is a runtime function, which wrappers
// call for their own needs (stack growth, race detector hooks, panics).
func inRuntime(name string) bool {
	return strings.HasPrefix(name, "runtime.") || strings.HasPrefix(name, "runtime/")
}

// helper reports whether a wrapper's call of callee is for the wrapper's
// own needs: a call into the runtime, unless the wrapper is the
// runtime's own (runtime.gcenable.gowrap1 starts runtime.bgsweep), then
// only its stack growth, race detector and panic helpers.
func helper(wrapper, callee string) bool {
	if !inRuntime(wrapper) {
		return inRuntime(callee)
	}
	for _, p := range []string{"runtime.morestack", "runtime.racefunc", "runtime.panic", "runtime.gopanic", "runtime.sigpanic", "runtime.gcWriteBarrier"} {
		if strings.HasPrefix(callee, p) {
			return true
		}
	}
	return false
}

// resolveWrapper returns the function the wrapper f calls: its frame, and
// the physical function if the call was not inlined; nil if that cannot
// be known from the code.
func resolveWrapper(bin *gobin.Binary, f *gobin.Func) (*FuncLine, *gobin.Func) {
	for _, fr := range bin.OuterInlined(f) {
		if !helper(f.Name, fr.Func) {
			return &FuncLine{Func: gobin.PrintName(fr.Func), File: fr.File, Line: fr.StartLine}, nil
		}
	}
	callee, ok := firstCall(bin, f)
	if !ok {
		return nil, nil
	}
	fr := EntryFrame(callee)
	return &fr, callee
}

// firstCall returns the function called by the first call in f's own
// body (not in code inlined into it) that is not to a helper. ok
// is false if there is none, or if it is an indirect call.
func firstCall(bin *gobin.Binary, f *gobin.Func) (callee *gobin.Func, ok bool) {
	code, err := bin.Code(f)
	if err != nil {
		return nil, false
	}
	for _, c := range calls(bin.Arch, f.Entry, code) {
		if len(bin.Frames(c.pc, false)) != 1 {
			continue // inlined code
		}
		if !c.direct {
			return nil, false
		}
		g := bin.FindFunc(c.target)
		if g == nil {
			return nil, false
		}
		if !helper(f.Name, g.Name) {
			return g, true
		}
	}
	return nil, false
}

// call is one call instruction: where it is, and where it goes if it is
// direct.
type call struct {
	pc, target uint64
	direct     bool
}

// calls decodes the call instructions of code, which starts at pc. It
// stops at the first instruction it cannot decode.
func calls(arch string, pc uint64, code []byte) []call {
	var out []call
	switch arch {
	case "amd64":
		for len(code) > 0 {
			inst, err := x86asm.Decode(code, 64)
			if err != nil {
				return out
			}
			if inst.Op == x86asm.CALL {
				c := call{pc: pc}
				if rel, ok := inst.Args[0].(x86asm.Rel); ok {
					c.target, c.direct = pc+uint64(inst.Len)+uint64(int64(rel)), true
				}
				out = append(out, c)
			}
			pc, code = pc+uint64(inst.Len), code[inst.Len:]
		}
	case "arm64":
		for ; len(code) >= 4; pc, code = pc+4, code[4:] {
			inst, err := arm64asm.Decode(code[:4])
			if err != nil {
				return out
			}
			switch inst.Op {
			case arm64asm.BL:
				if rel, ok := inst.Args[0].(arm64asm.PCRel); ok {
					out = append(out, call{pc: pc, target: pc + uint64(int64(rel)), direct: true})
				}
			case arm64asm.BLR:
				out = append(out, call{pc: pc})
			}
		}
	}
	return out
}
