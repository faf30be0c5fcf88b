// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// mProf_MallocLineage returns the bucket of the current allocation of the
// given size when GODEBUG=lineageprofile=1: the allocation's stack, as
// mProf_Malloc's callers(3, ...) records it, with the goroutine's creation
// ancestry appended (lineage_profile.go). Only that bucket is created: the
// stack alone is taken from mProf_StackFP's table of logical stacks, not
// from a bucket, so the heap profile holds no zero-valued bucket for the
// stack without its ancestry. It is called only by mProf_Malloc and must
// not be inlined (mProf_StackFP skips its frame).
//
//go:noinline
func mProf_MallocLineage(mp *m, size uintptr) *bucket {
	// Skip mProf_MallocLineage, mProf_Malloc, profilealloc and the malloc
	// function.
	n := mProf_StackFP(mp, 4)
	n = lineageProfAppend(mp.curg, mp.profStack, n, int(debug.profstackdepth))
	return stkbucket(memProfile, size, mp.profStack[:n], true)
}
