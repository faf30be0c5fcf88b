package workload

import (
	"fmt"
	"runtime"
)

// AtDepth calls f so that runtime.Callers(1, ...) called from f itself
// reports exactly depth frames: f, the recursion below it, and everything
// down to runtime.goexit. Profilers record the allocating function's stack
// the same way, so depth is the length of the recorded stack (before any
// truncation by the profiler's depth limit).
func AtDepth(depth int, f func()) {
	here := callersFrom(0) // AtDepth .. goexit
	// Inside f: f + (n+1) frames of recurse + here.
	n := depth - here - 2
	if n < 0 {
		panic(fmt.Sprintf("workload.AtDepth: depth %d is below the caller's own depth %d", depth, here+2))
	}
	recurse(n, f)
}

// callersFrom counts the frames from its caller (skip=0), or skip frames
// above it, down to goexit.
func callersFrom(skip int) int {
	pcs := make([]uintptr, 1024)
	return runtime.Callers(skip+2, pcs)
}

// Depth reports the number of frames runtime.Callers(1, ...) would report
// in the caller: the caller itself down to goexit. Tests use it to check
// AtDepth.
func Depth() int { return callersFrom(1) }

//go:noinline
func recurse(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	recurse(n-1, f)
}
