// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Profilers linked only into programs that can read them.
//
// Only a program that links runtime.memProfileInternal (through
// runtime.MemProfile or runtime/pprof) can read the heap profile; in any
// other the linker sets disableMemoryProfiling and the profile is never
// recorded. Yet mallocgc and the sweeper reach the recording code, so
// every program used to link it: the frame-pointer heap profiler, its
// index and tables, the per-P caches and counts and the lineage of
// samples. Likewise only a program that links
// runtime.goroutineProfileWithLabels can take a goroutine profile, yet the
// scheduler reaches saveg.
//
// The runtime calls that code through the hooks below. The linker fills a
// hook only when its gate function is reachable (memProfileInternal,
// goroutineProfileWithLabels; see cmd/link/internal/ld/deadcode_gated.go);
// otherwise it leaves the function values nil, and leaves out what only
// they reach. Callers check for nil: a program may still set
// MemProfileRate itself, and then records nothing, as nothing could read
// it.

package runtime

import (
	"internal/profilerecord"
	"unsafe"
)

// memProfFuncs are the heap profiler's recording entry points, and the
// per-P state it keeps between garbage collections.
type memProfFuncs struct {
	malloc    func(mp *m, p unsafe.Pointer, size uintptr)
	free      func(sp *specialprofile)
	foldAll   func()             // mark termination: every P's counts
	flush     func(index uint32) // publish future cycle index
	foldFrees func()             // sweep done: every P's frees
	destroyP  func(pp *p)        // a P goes away
	// bucketAlloc allocates a heap profile bucket (newBucket).
	bucketAlloc func(size uintptr) unsafe.Pointer
}

// goroutineProfFuncs is the goroutine profile's frame-pointer path.
type goroutineProfFuncs struct {
	savegFP func(gp *g, r *profilerecord.StackRecord, pcbuf []uintptr) bool
}

// fpProfFuncs are what every frame-pointer profiling path needs: the per-M
// scratch space, and GODEBUG=fpunwindcheck's entry points outside the
// heap and goroutine profiles' own paths.
type fpProfFuncs struct {
	scratchInit     func(mp *m)
	checkBlockEvent func(which bucketType, skip int, gp *g, stk []uintptr)
	checkTraceStack func(skip int, gp *g, pcBuf []uintptr)
	checkReport     func()
}

// The gated hooks: nil functions in a program that cannot read the heap
// profile, take a goroutine profile, or (fpProfHooks) read any profile or
// trace recorded by frame pointers.
var (
	memProfHooks       = memProfFuncs{mProf_Malloc, memProfFreeSpecial, memProfPFoldAll, memProfFlushCycle, memProfPFoldFreesAll, memProfDestroyP, memProfBucketAlloc}
	goroutineProfHooks = goroutineProfFuncs{savegFP}
	fpProfHooks        = fpProfFuncs{fpProfScratchInit, fpunwindcheckBlockEvent, fpunwindcheckTraceStack, fpunwindcheckReport}
)

// What the runtime calls: the hooks, copied by schedinit before the first
// allocation. The runtime cannot read the hooks where it calls them: their
// initializers name functions that allocate or print, which reach those
// call sites again (an initialization cycle).
var (
	memProfCalls       memProfFuncs
	goroutineProfCalls goroutineProfFuncs
	fpProfCalls        fpProfFuncs
)

// profGatedInit copies the gated hooks; see memProfCalls.
func profGatedInit() {
	memProfCalls = memProfHooks
	goroutineProfCalls = goroutineProfHooks
	fpProfCalls = fpProfHooks
}

// memProfFlushCycle publishes future cycle index in the buckets counted
// into it.
func memProfFlushCycle(index uint32) {
	memProfNotePublished(index) // mprof_pcounts.go
	mProfFlushTouched(index)    // mprof_touched.go
}

// memProfDestroyP hands what pp kept for the heap profile back.
func memProfDestroyP(pp *p) {
	specialProfCacheFlush(pp) // mprof_specialcache.go
	memProfPFold(pp)          // mprof_pcounts.go
}

// memProfFreeSpecial counts the free of a sampled object and frees its
// profile special.
func memProfFreeSpecial(sp *specialprofile) {
	mProf_FreeSampled(sp.b) // mprof_pcounts.go
	specialProfFree(sp)     // mprof_specialcache.go
}
