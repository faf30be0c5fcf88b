package main

// An edit replaces old, which must occur exactly once, with new in one of
// the fork's own runtime files (src/runtime/FILE in this repository).
type edit struct {
	file, old, new string
}

// A mechanism is one part of the fork's profilers that the series could
// do without: the profiles stay the same, only their cost changes. off
// turns it off, by source edits or (godebug) by a GODEBUG setting.
type mechanism struct {
	name    string // variant name: fork-NAME
	patch   string // the patch that brings it (patches/series)
	what    string
	godebug string
	edits   []edit
}

// The edits of slots and chainhead, which spill makes together.
var (
	halfSlots   = edit{"mprof_fpindex.go", "\tfpIndexSlots = 1 << 15 ", "\tfpIndexSlots = 1 << 14 "}
	noChainHead = edit{"mprof_heapfp.go", "\tmemProfStacks.prefetch(h)\n", ""}
)

// mechanisms are measured in this order. Each edit restores what the code
// did before the mechanism: the chained table alone, an index of half the
// slots, no prefetch of the chain head, callers() to confirm
// a new stack, an entry at a stack's first sighting, the full expansion
// of every PC, persistentalloc for buckets, the profile locks for every
// sample and free, the fixalloc and a walk from the head of the span's
// specials, a flush of every bucket, the read prefetch, and no
// prefetching pass.
var mechanisms = []mechanism{
	{
		name:  "index",
		patch: "0018",
		what:  "the open-addressed index of stacks found in the table",
		edits: []edit{
			{"mprof_fpindex.go",
				"func (t *fpIndex) find(tab *fpStackTab, h uintptr, phys []uintptr, key uintptr, flag bool) (b *bucket, slow, found bool) {\n",
				"func (t *fpIndex) find(tab *fpStackTab, h uintptr, phys []uintptr, key uintptr, flag bool) (b *bucket, slow, found bool) {\n" +
					"\tif e := tab.lookup(h, phys, key, flag); e != nil {\n\t\treturn e.bucket, e.slow, true\n\t} else if true {\n\t\treturn nil, false, false\n\t}\n"},
			{"mprof_fpindex.go",
				"func (t *fpIndex) prefetch(h uintptr, n int) {\n",
				"func (t *fpIndex) prefetch(h uintptr, n int) {\n\tif true {\n\t\treturn\n\t}\n"},
		},
	},
	{
		name:  "slots",
		patch: "0018",
		what:  "an index of 32768 slots instead of 16384",
		edits: []edit{halfSlots},
	},
	{
		name:  "chainhead",
		patch: "0019",
		what:  "prefetching the stack table's chain head with the index slot",
		edits: []edit{noChainHead},
	},
	{
		name:  "spill",
		patch: "0018, 0019",
		what:  "slots and chainhead together: the stacks the index leaves out",
		edits: []edit{halfSlots, noChainHead},
	},
	{
		name:  "exact",
		patch: "0019",
		what:  "confirming a new stack by frame sizes instead of callers()",
		edits: []edit{
			{"mprof_fpexact.go", "\tif !fpExactByDelta || !fpWalkRecords(", "\tif true || !fpWalkRecords("},
		},
	},
	{
		name:  "second",
		patch: "0019",
		what:  "stack table entries made at a stack's second sighting, not its first",
		edits: []edit{
			{"mprof_heapfp.go",
				"\t\tif b := stkbucket(memProfile, size, sc.logic[:nfp], false); b != nil {",
				"\t\tif b := stkbucket(memProfile, size, sc.logic[:nfp], true); b != nil {"},
		},
	},
	{
		name:  "plain",
		patch: "0017",
		what:  "the cache of plain return PCs, which skip the expansion",
		edits: []edit{
			{"mprof_fpwalk.go", "\treturn fpPlainPCs[fpPCSlot(pc)].Load() == pc", "\treturn false && fpPlainPCs[fpPCSlot(pc)].Load() == pc"},
		},
	},
	{
		name:  "huge",
		patch: "0029",
		what:  "bucket chunks after the first made of a huge page",
		edits: []edit{
			{"mprof_bucketalloc.go", "\th := physHugePageSize\n", "\th := uintptr(0)\n"},
		},
	},
	{
		name:  "populate",
		patch: "0029",
		what:  "bucket chunks of their own, whose pages the kernel fills in one call",
		edits: []edit{
			{"mprof_bucketalloc.go",
				"\tassertLockHeld(&profInsertLock)\n",
				"\tassertLockHeld(&profInsertLock)\n\tif true {\n\t\treturn persistentalloc(size, 0, &memstats.buckhash_sys)\n\t}\n"},
		},
	},
	{
		name:  "pcounts",
		patch: "0028",
		what:  "per-P counts and logs of samples and frees",
		edits: []edit{
			{"mprof_pcounts.go", "func mProf_MallocLocal(b *bucket) bool {\n", "func mProf_MallocLocal(b *bucket) bool {\n\tif true {\n\t\treturn false\n\t}\n"},
			{"mprof_pcounts.go", "func mProf_FreeLocal(b *bucket) bool {\n", "func mProf_FreeLocal(b *bucket) bool {\n\tif true {\n\t\treturn false\n\t}\n"},
		},
	},
	{
		name:  "specials",
		patch: "0027",
		what:  "per-P caches of profile specials and the span's hint",
		edits: []edit{
			{"mprof_specialcache.go",
				"\tpp := mp.p.ptr()\n\tif pp == nil {\n\t\tlock(&mheap_.speciallock)\n\t\ts := (*specialprofile)",
				"\tpp := mp.p.ptr()\n\tif true || pp == nil {\n\t\tlock(&mheap_.speciallock)\n\t\ts := (*specialprofile)"},
			{"mprof_specialcache.go",
				"\tpp := mp.p.ptr()\n\tif pp == nil {\n\t\tlock(&mheap_.speciallock)\n\t\tmheap_.specialprofilealloc.free",
				"\tpp := mp.p.ptr()\n\tif true || pp == nil {\n\t\tlock(&mheap_.speciallock)\n\t\tmheap_.specialprofilealloc.free"},
			{"mprof_specialcache.go", "if h := span.specialHint; h != nil && (", "if h := span.specialHint; false && h != nil && ("},
		},
	},
	{
		name:  "touched",
		patch: "0022",
		what:  "flushing only the buckets counted into the cycle",
		edits: []edit{
			{"mprof_touched.go", "func mProfTouch(b *bucket, mr *memRecord, c uint32) {\n", "func mProfTouch(b *bucket, mr *memRecord, c uint32) {\n\tif true {\n\t\treturn\n\t}\n"},
			{"mprof_touched.go", "func mProfFlushTouched(c uint32) {\n",
				"func mProfFlushTouched(c uint32) {\n" +
					"\tfor b := (*bucket)(mbuckets.Load()); b != nil; b = b.allnext {\n" +
					"\t\tmr := b.mp()\n\t\tmpc := &mr.future[c]\n\t\tmr.active.add(mpc)\n\t\t*mpc = memRecordCycle{}\n\t}\n" +
					"\tif true {\n\t\treturn\n\t}\n"},
		},
	},
	{
		name:    "prefetchw",
		patch:   "0020",
		what:    "prefetching lines to be written (PREFETCHW) instead of read",
		godebug: "cpu.prfchw=off",
	},
	{
		name:  "gpass",
		patch: "0021",
		what:  "the goroutine profile's pass prefetching gs and stacks ahead",
		edits: []edit{
			{"mprof_goroutinefp.go", "\t\tif j := i + fpProfPrefetchAhead; j < length {\n\t\t\t// From", "\t\tif j := i + fpProfPrefetchAhead; false && j < length {\n\t\t\t// From"},
			{"mprof_goroutinefp.go", "\t\tif j := i + fpProfPrefetchAhead/2; j < length {", "\t\tif j := i + fpProfPrefetchAhead/2; false && j < length {"},
		},
	},
}

// A benchRun is one invocation of a test binary in every round.
type benchRun struct {
	pkg, bench, benchtime string
}

// benchRuns are the shapes of issue #40's table: a 64-byte allocation 32
// frames deep at rate 1 and at the default rate, the many-stack tree at
// rate 4096 once its stacks are known and in a fresh process, and the
// goroutine profile of 10,000 goroutines that all moved.
var benchRuns = []benchRun{
	{"heap", "^BenchmarkAlloc64$/^depth=32/rate=(1|default)$", "1s"},
	{"heap", "^BenchmarkTreeCost$/^depth=(10|12)$", "1s"},
	{"goprof", "^BenchmarkGoroutineProfileMoved$/^goroutines=10000$", "1s"},
	{"heap", "^BenchmarkTreeCold$/^depth=(9|12)$", "2x"},
}
