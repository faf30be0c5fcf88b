package stack

import (
	"fmt"
	"io"
	"strings"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
)

// Loc is one logical frame of a symbolized stack.
type Loc struct {
	PC      uint64 // runtime PC as walked
	Func    string // "" if the PC is outside Go code
	File    string
	Line    int
	Offset  uint64 // PC minus function entry (physical frames only)
	Inlined bool
	Signal  bool // first frame interrupted by a signal (below a signal frame)
	Wrapper bool // compiler-generated wrapper, which Go tracebacks leave out
}

// Symbolize expands walked PCs into logical frames, innermost first. The first
// PC is exact unless firstIsRet; all others are return addresses.
func Symbolize(bin *gobin.Binary, bias uint64, pcs []uint64, firstIsRet bool) []Loc {
	var out []Loc
	for i, pc := range pcs {
		ret := i > 0 || firstIsRet
		fr := bin.Frames(pc-bias, ret)
		if len(fr) == 0 {
			out = append(out, Loc{PC: pc})
			continue
		}
		for _, f := range fr {
			l := Loc{PC: pc, Func: f.Func, File: f.File, Line: f.Line, Inlined: f.Inlined, Wrapper: f.FuncID == gobin.FuncIDWrapper}
			if !f.Inlined {
				l.Offset = pc - bias - f.Entry
			}
			out = append(out, l)
		}
	}
	return out
}

// SymbolizeWalk is Symbolize for a walk that may cross signal frames: the
// interrupted PCs recovered from a signal frame are exact, and their first
// logical frame is marked Signal.
func SymbolizeWalk(bin *gobin.Binary, bias uint64, w Walk) []Loc {
	return symbolizeWalk(bin, bias, w, false)
}

// SymbolizeResumed is SymbolizeWalk for a goroutine walked from where it
// resumes (its saved sched or syscall PC). That PC is a return address too,
// unless it is a function's entry (a goroutine that never ran): the
// runtime's traceback reads it so.
func SymbolizeResumed(bin *gobin.Binary, bias uint64, w Walk) []Loc {
	ret := len(w.PCs) > 0
	if ret {
		if f := bin.FindFunc(w.PCs[0] - bias); f != nil && f.Entry == w.PCs[0]-bias {
			ret = false
		}
	}
	return symbolizeWalk(bin, bias, w, ret)
}

func symbolizeWalk(bin *gobin.Binary, bias uint64, w Walk, firstIsRet bool) []Loc {
	var out []Loc
	for i, pc := range w.PCs {
		sig := w.IsSignal(i)
		locs := Symbolize(bin, bias, []uint64{pc}, (i > 0 || firstIsRet) && !sig)
		if sig && len(locs) > 0 {
			locs[0].Signal = true
		}
		out = append(out, locs...)
	}
	return out
}

// Ancestor is one step of a goroutine's lineage, as the lineage ABI reader
// returns it.
type Ancestor = lineageabi.Step

// CreatedBy returns the "created by" frame for a at its go statement: the
// function that executed it (the physical function, as the runtime prints)
// and the source position of the call.
func CreatedBy(bin *gobin.Binary, bias uint64, a Ancestor) Loc {
	l := Loc{PC: a.GoPC}
	f := bin.FindFunc(a.GoPC - bias)
	if f == nil {
		return l
	}
	pc := a.GoPC - bias
	if pc > f.Entry {
		pc -= bin.Quantum
	}
	l.Func = f.Name
	l.File, l.Line = f.FileLine(pc)
	l.Offset = a.GoPC - bias - f.Entry
	return l
}

// Thread is everything printed for one thread.
type Thread struct {
	TID     int
	State   string
	Goid    uint64 // 0 if unknown or on a system stack
	Frames  []Loc
	Stop    string
	Lineage []Ancestor
	Note    string // e.g. why lineage is missing
}

// FuncName prints a frame's function name as a Go traceback does.
func FuncName(l Loc) string {
	if l.Func == "" {
		return fmt.Sprintf("?? pc=%#x", l.PC)
	}
	return gobin.PrintName(l.Func)
}

func writeFrames(w io.Writer, frames []Loc, indent string) {
	for _, l := range frames {
		if l.Signal {
			fmt.Fprintf(w, "%ssignal arrived during execution\n", indent)
		}
		if l.Func == "" {
			fmt.Fprintf(w, "%s%s\n", indent, FuncName(l))
			continue
		}
		fmt.Fprintf(w, "%s%s(...)\n%s\t%s:%d", indent, FuncName(l), indent, l.File, l.Line)
		if !l.Inlined && l.Offset > 0 {
			fmt.Fprintf(w, " +%#x", l.Offset)
		}
		fmt.Fprintln(w)
	}
}

// WriteFrames prints frames as Write prints a thread's native stack.
func WriteFrames(w io.Writer, frames []Loc) { writeFrames(w, frames, "") }

// Write prints t like a Go traceback, with the stitched lineage below the
// goroutine's root frame.
func Write(w io.Writer, bin *gobin.Binary, bias uint64, t Thread) {
	fmt.Fprintf(w, "thread %d", t.TID)
	if t.Goid != 0 {
		fmt.Fprintf(w, " goroutine %d", t.Goid)
	}
	if t.State != "" {
		fmt.Fprintf(w, " [%s]", stateName(t.State))
	}
	fmt.Fprintln(w, ":")
	writeFrames(w, t.Frames, "")
	if t.Stop != "" {
		fmt.Fprintf(w, "...stack walk ended: %s\n", t.Stop)
	}
	for _, a := range t.Lineage {
		WriteCreatedBy(w, bin, bias, a)
	}
	if t.Note != "" {
		fmt.Fprintf(w, "(%s)\n", t.Note)
	}
	fmt.Fprintln(w)
}

// WriteCreatedBy prints one lineage step and its creation stack.
func WriteCreatedBy(w io.Writer, bin *gobin.Binary, bias uint64, a Ancestor) {
	l := CreatedBy(bin, bias, a)
	fmt.Fprintf(w, "created by %s at %s:%d", FuncName(l), l.File, l.Line)
	if a.ParentGoid != 0 {
		fmt.Fprintf(w, " in goroutine %d", a.ParentGoid)
	}
	fmt.Fprintln(w)
	if len(a.Stack) > 0 {
		writeFrames(w, Symbolize(bin, bias, a.Stack, true), "\t")
	}
}

func stateName(s string) string {
	switch s {
	case "R":
		return "running"
	case "S":
		return "sleeping"
	case "D":
		return "disk sleep"
	case "t", "T":
		return "stopped"
	}
	return strings.ToLower(s)
}
