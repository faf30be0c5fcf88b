// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build amd64 || arm64

// Prefetching a line the caller is about to write.
//
// sys.Prefetch asks for a line to be read. A line fetched that way may
// arrive shared, and a write to it, an atomic one above all, then waits a
// second time, for the other cores' copies to be invalidated. The
// profilers' passes over goroutines and buckets write what they prefetch:
// a goroutine's status and profile state, which the core it last ran on
// holds modified, and a bucket's counts, which the sweeper on another P
// writes too. prefetchWrite asks for the line in a state that can be
// written: PREFETCHW on amd64, on the CPUs that report it
// (internal/cpu's X86.HasPRFCHW; elsewhere the read prefetch), and PRFM
// PSTL1KEEP on arm64. Other architectures use sys.Prefetch
// (prefetchw_other.go).
//
// Both are assembly functions without a frame that take their arguments
// in registers, so a call costs a few instructions; prefetchWrite3 asks
// for the lines of one goroutine in one call.

package runtime

// prefetchWrite starts fetching the line at addr, to be written. Like
// sys.Prefetch, it never faults.
func prefetchWrite(addr uintptr)

// prefetchWrite3 starts fetching the lines at a, b and c, to be written.
func prefetchWrite3(a, b, c uintptr)
