// Package lineageraw lets the repository's own tools see what the lineage
// SDK (fpsafe.dev/misc/lineage) decoded of a goroutine beyond its public
// fields: the registry's reading of it (ABI status code, raw record with
// the plausibility flags of a damaged core, wait list) and the stack walk
// its frames came from. golineage reads targets through the SDK's public
// methods, so that they are exactly as fast and as right for every reader,
// and prints these details, which are not part of the SDK's promise.
//
// The SDK sets Goroutine when it is initialized.
package lineageraw

import (
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// Goroutine returns the registry's reading of g, a *lineage.Goroutine, and
// the walk of its stack (nil if the read walked none, or if g is a
// region's goroutine, which has no registry reading).
var Goroutine func(g any) (*lineageabi.Goroutine, *stack.Walk)

// KeepRaw makes the reads of p, a *lineage.Process, keep what Goroutine
// returns (the SDK lets it go otherwise).
var KeepRaw func(p any)

// Stats returns what the read that gave s, a *lineage.Snapshot, counted:
// the registry reader's statistics, sudogs included.
var Stats func(s any) lineageabi.LiveStats

// OpenShared opens live process pid, running the executable bin (loaded
// at bias) whose lineage ABI is abi, as a *lineage.Process that shares bin
// with its caller: its Close leaves bin open. A reader of many processes
// of one binary (the node agent) keeps one copy of its tables. labels says
// whether reads take goroutines' pprof labels.
var OpenShared func(pid int, bin *gobin.Binary, bias uint64, abi *lineageabi.ABI, labels bool) any

// Locs converts frames, a []lineage.Frame, to the stack package's.
var Locs func(frames any) []stack.Loc

// TestHookWalk, if set, runs while a walk of parked goroutines' stacks
// reads them (tests that change the target mid-read set it).
var TestHookWalk func()
