// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// The goroutinecreate profile: live goroutines counted by where they were
// created, for hunting goroutine leaks (go.dev/issue/16894).
//
// Each goroutine is one sample whose stack is its creation ancestry, as
// GODEBUG lineageprofile=1 appends it to other profiles after
// runtime.goexit (see runtime/lineage_profile.go): the go statement that
// created it (with GODEBUG lineagestack=N, the creator's stack there), then
// its ancestors' go statements, parent first. A profile's leaf function is
// the one that executed the go statement, so `go tool pprof -top` counts
// goroutines by creation site and -cum by every function up the chain.
// The profile does not depend on GODEBUG lineageprofile; with GODEBUG
// lineage=0 (no lineage records) each goroutine counts at its go statement
// only. Goroutines without a go statement (the main goroutine, cgo
// callbacks) and the runtime's own goroutines are left out.

package pprof

import (
	"internal/profilerecord"
	"io"
	"unsafe"
)

var goroutineCreateProfile = &Profile{
	name:  "goroutinecreate",
	count: countGoroutineCreate,
	write: writeGoroutineCreate,
}

func countGoroutineCreate() int {
	n, _ := pprof_goroutineCreateInternal(nil)
	return n
}

func writeGoroutineCreate(w io.Writer, debug int) error {
	return writeRuntimeProfile(w, debug, "goroutinecreate", func(p []profilerecord.StackRecord, _ []unsafe.Pointer) (int, bool) {
		return pprof_goroutineCreateInternal(p)
	})
}

//go:linkname pprof_goroutineCreateInternal runtime.pprof_goroutineCreateInternal
func pprof_goroutineCreateInternal(p []profilerecord.StackRecord) (n int, ok bool)
