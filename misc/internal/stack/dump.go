package stack

import "strings"

// The frames the program's own goroutine dump (runtime.Stack with all set,
// runtime/pprof's goroutine profile at debug=2, a crash at the default
// GOTRACEBACK) prints of a stack: the runtime's rules (runtime/traceback.go:
// showframe, showfuncinfo, elideWrapperCalling, and traceback1's "print
// everything if nothing would be printed") applied to what a reader outside
// sees, function names and the pclntab's wrapper flag.

// DumpHidden reports, for each frame of a stack (innermost first), whether
// the dump leaves it out.
func DumpHidden(locs []Loc) []bool {
	hidden := make([]bool, len(locs))
	if !DumpShowsAny(locs) {
		return hidden
	}
	callee := ""
	for i, l := range locs {
		hidden[i] = !shownInDump(l, i == 0, callee)
		callee = l.Func
	}
	return hidden
}

// DumpShowsAny reports whether the dump shows any of the frames. If it
// shows none, it prints them all instead: so it does for a goroutine that
// has not started (its start function, often a go statement's wrapper, and
// runtime.goexit) and for one of the runtime's own.
func DumpShowsAny(locs []Loc) bool {
	callee := ""
	for i, l := range locs {
		if shownInDump(l, i == 0, callee) {
			return true
		}
		callee = l.Func
	}
	return false
}

// shownInDump reports whether the dump prints frame l (if it prints any):
// not the runtime's unexported functions (but runtime.gopanic when it is
// not the innermost frame, and the finalizer and cleanup goroutines'
// loops), not a wrapper unless a panic called it. first is the innermost
// frame, callee the function l called.
func shownInDump(l Loc, first bool, callee string) bool {
	if l.Wrapper {
		return PanicCallee(callee)
	}
	switch l.Func {
	case "runtime.runFinalizers", "runtime.runCleanups":
		return true
	case "runtime.gopanic":
		if !first {
			return true
		}
	}
	if !strings.Contains(l.Func, ".") {
		return false
	}
	name, ok := strings.CutPrefix(l.Func, "runtime.")
	if !ok {
		return true
	}
	// Exported runtime functions and methods of exported types:
	// runtime.Goexit, runtime.(*Frames).Next.
	name = strings.TrimPrefix(name, "(*")
	return name != "" && 'A' <= name[0] && name[0] <= 'Z'
}

// PanicCallee reports whether a wrapper that called fn stays in a
// traceback: the runtime shows a wrapper whose callee panicked
// (runtime/traceback.go, elideWrapperCalling).
func PanicCallee(fn string) bool {
	return fn == "runtime.gopanic" || fn == "runtime.sigpanic" || fn == "runtime.panicwrap"
}
