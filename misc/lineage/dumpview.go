package lineage

import "strings"

// The program's own view of its goroutines: which goroutines its
// goroutine dump (runtime.Stack with all set, runtime/pprof's goroutine
// profile at debug=2) prints at the default GOTRACEBACK level, by the
// runtime's rule (runtime/traceback.go, isSystemGoroutine) applied to what
// a reader outside sees. Which frames it prints is stack.DumpHidden's.

// systemStart reports whether a goroutine whose start function (the
// runtime's g.startpc: the wrapper, if the goroutine starts in one) is
// name is the runtime's own. The finalizer and cleanup goroutines count
// as the runtime's only while they run no user code (systemRunning).
func systemStart(name string) bool {
	switch name {
	case "runtime.main", "runtime.corostart", "runtime.handleAsyncEvent":
		return false
	}
	return strings.HasPrefix(name, "runtime.")
}

// systemRunning corrects System for the finalizer and cleanup goroutines
// with their stacks: the runtime shows them while they call a finalizer or
// a cleanup, that is while their stacks hold a function outside the
// runtime.
func systemRunning(start string, frames []Frame) bool {
	if start != "runtime.runFinalizers" && start != "runtime.runCleanups" {
		return true
	}
	for _, f := range frames {
		if f.Function != "" && !inRuntime(f.Function) {
			return false
		}
	}
	return true
}

func inRuntime(name string) bool {
	return strings.HasPrefix(name, "runtime.") || strings.HasPrefix(name, "runtime/internal/") || strings.HasPrefix(name, "internal/runtime/")
}

// DumpFrames returns the frames of a stack that the program's own
// goroutine dump prints (those with Hidden false), in order. Like the
// stacks of GoroutineStacks, the result may share frames' array (it does
// when the shown frames are contiguous, as they are unless a hidden
// wrapper lies between two of them): callers must not modify it.
func DumpFrames(frames []Frame) []Frame {
	i := 0
	for i < len(frames) && frames[i].Hidden {
		i++
	}
	j := len(frames)
	for j > i && frames[j-1].Hidden {
		j--
	}
	n := 0
	for _, f := range frames[i:j] {
		if !f.Hidden {
			n++
		}
	}
	if n == j-i {
		return frames[i:j:j]
	}
	out := make([]Frame, 0, n)
	for _, f := range frames[i:j] {
		if !f.Hidden {
			out = append(out, f)
		}
	}
	return out
}
