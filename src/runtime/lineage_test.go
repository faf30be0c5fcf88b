// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"fmt"
	"internal/platform"
	"internal/race"
	"internal/testenv"
	"os"
	"reflect"
	"runtime"
	"runtime/testdata/lineageabi"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The tests below read the lineage ABI (doc/lineage-abi.md) as an external
// reader would: raw memory at the offsets the header publishes, never
// runtime types. Only the header's address comes from the runtime.

var (
	peek64 = lineageabi.P64
	peek32 = lineageabi.P32
)

// linHdr holds the header fields a reader uses, by the version 2 offsets.
type linHdr struct {
	addr                                      uintptr
	flags                                     uint32
	regions, nregions                         uint64
	maxDepth, maxStack, recordSize            uint32
	rSeq, rTid, rCur, rNext, rState           uint32
	cSeq, cGoid, cSite, cParent               uint32
	cNanc, cNstk, cFlags, cDepth, cAnc        uint32
	aSize, aStart, aGopc, cStack, gM, mRegion uint32
	tlsG                                      int64
	textBase                                  uint64
}

func readLinHdr(t *testing.T) linHdr {
	t.Helper()
	a := runtime.LineageHeaderAddr()
	if string(lineageabi.Bytes(a, 16)) != lineageabi.Magic {
		t.Fatalf("bad magic")
	}
	if v := peek32(a + lineageabi.OffVersion); v != lineageabi.Version {
		t.Fatalf("version %d", v)
	}
	if hs := peek32(a + lineageabi.OffHeaderSize); hs != lineageabi.HeaderSize {
		t.Fatalf("header_size %d", hs)
	}
	u := func(off uintptr) uint32 { return peek32(a + off) }
	h := linHdr{
		addr: a, flags: u(lineageabi.OffFlags),
		regions: peek64(a + lineageabi.OffRegions), nregions: peek64(a + lineageabi.OffNRegions),
		maxDepth: u(lineageabi.OffMaxDepth), maxStack: u(lineageabi.OffMaxStack), recordSize: u(lineageabi.OffRecordSize),
		rSeq: u(lineageabi.OffRegionSeq), rTid: u(lineageabi.OffRegionTid), rCur: u(lineageabi.OffRegionCur),
		rNext: u(lineageabi.OffRegionNext), rState: u(lineageabi.OffRegionState),
		cSeq: u(lineageabi.OffRecSeq), cGoid: u(lineageabi.OffRecGoid), cSite: u(lineageabi.OffRecSite),
		cParent: u(lineageabi.OffRecParentGoid), cNanc: u(lineageabi.OffRecNanc), cNstk: u(lineageabi.OffRecNstk),
		cFlags: u(lineageabi.OffRecFlags), cDepth: u(lineageabi.OffRecDepth), cAnc: u(lineageabi.OffRecAnc),
		aSize: u(lineageabi.OffAncSize), aStart: u(lineageabi.OffAncStart), aGopc: u(lineageabi.OffAncGopc),
		cStack: u(lineageabi.OffRecStack), gM: u(lineageabi.OffGM), mRegion: u(lineageabi.OffMRegion),
		tlsG: int64(peek64(a + lineageabi.OffTLSG)), textBase: peek64(a + lineageabi.OffTextBase),
	}
	if h.flags&1 == 0 {
		t.Fatalf("header not READY: flags %#x", h.flags)
	}
	if peek64(a+lineageabi.OffSelf) != uint64(a) {
		t.Fatalf("self %#x, want %#x", peek64(a+lineageabi.OffSelf), a)
	}
	return h
}

// linEntry is a goroutine of a chain. Only the record's own goroutine and
// its parent have a goid: the ancestor entries beyond carry none (0 here).
type linEntry struct{ goid, startpc, gopc uint64 }

type linRec struct {
	addr        uintptr
	parent      uint64
	nstk, flags uint32
	depth       uint32
	chain       []linEntry // self, then ancestors
	stack       []uint64
}

// readRec copies a record with the documented seqcount retry rule.
func (h *linHdr) readRec(t *testing.T, r uintptr) linRec {
	t.Helper()
	rec, err := h.readRecErr(r)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// pc turns a site offset into a PC: text_base + off, 0 if unknown.
func (h *linHdr) pc(off uint32) uint64 {
	if off == 0 {
		return 0
	}
	return h.textBase + uint64(off)
}

// entry reads the site entry at e.
func (h *linHdr) entry(goid uint64, e uintptr) linEntry {
	return linEntry{goid, h.pc(peek32(e + uintptr(h.aStart))), h.pc(peek32(e + uintptr(h.aGopc)))}
}

// childAncestors returns the ancestors a child of the goroutine with chain
// has: its chain, cut to max_depth, with no goid beyond the parent.
func (h *linHdr) childAncestors(chain []linEntry) []linEntry {
	want := slices.Clone(chain[:min(len(chain), int(h.maxDepth))])
	for i := 1; i < len(want); i++ {
		want[i].goid = 0
	}
	return want
}

func (h *linHdr) readRecErr(r uintptr) (linRec, error) {
	for try := 0; try < 100; try++ {
		s1 := peek64(r + uintptr(h.cSeq))
		if s1&1 != 0 {
			continue
		}
		buf := make([]byte, h.recordSize)
		copy(buf, lineageabi.Bytes(r, int(h.recordSize)))
		if peek64(r+uintptr(h.cSeq)) != s1 {
			continue
		}
		b := uintptr(unsafe.Pointer(&buf[0]))
		p16 := func(off uint32) uint32 { return uint32(lineageabi.P16(b + uintptr(off))) }
		rec := linRec{addr: r, parent: peek64(b + uintptr(h.cParent)),
			nstk: p16(h.cNstk), flags: p16(h.cFlags), depth: peek32(b + uintptr(h.cDepth))}
		rec.chain = append(rec.chain, h.entry(peek64(b+uintptr(h.cGoid)), b+uintptr(h.cSite)))
		nanc := p16(h.cNanc)
		if nanc > h.maxDepth || rec.nstk > h.maxStack {
			return rec, fmt.Errorf("record %#x: nanc %d nstk %d over capacity", r, nanc, rec.nstk)
		}
		for i := uint32(0); i < nanc; i++ {
			var goid uint64
			if i == 0 {
				goid = rec.parent
			}
			rec.chain = append(rec.chain, h.entry(goid, b+uintptr(h.cAnc+i*h.aSize)))
		}
		for i := uint32(0); i < rec.nstk; i++ {
			rec.stack = append(rec.stack, peek64(b+uintptr(h.cStack+8*i)))
		}
		return rec, nil
	}
	return linRec{}, fmt.Errorf("record %#x never stable", r)
}

type linRegion struct {
	addr      uintptr
	tid, cur  uint64
	state     uint32
	consitent bool
}

func (h *linHdr) readRegion(r uintptr) linRegion {
	for try := 0; try < 100; try++ {
		s1 := peek64(r + uintptr(h.rSeq))
		if s1&1 != 0 {
			continue
		}
		g := linRegion{addr: r, tid: peek64(r + uintptr(h.rTid)), cur: peek64(r + uintptr(h.rCur)), state: peek32(r + uintptr(h.rState))}
		if peek64(r+uintptr(h.rSeq)) == s1 {
			g.consitent = true
			return g
		}
	}
	return linRegion{addr: r}
}

// regions walks the registry, bounded by nregions.
func (h *linHdr) allRegions(t *testing.T) []linRegion {
	out, err := h.allRegionsErr()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (h *linHdr) allRegionsErr() ([]linRegion, error) {
	var out []linRegion
	// The head, then the count: the list from that head is never longer.
	r := uintptr(peek64(h.addr + lineageabi.OffRegions))
	n := peek64(h.addr + lineageabi.OffNRegions)
	for i := uint64(0); r != 0; i++ {
		if i >= n {
			return nil, fmt.Errorf("registry longer than nregions %d", n)
		}
		out = append(out, h.readRegion(r))
		r = uintptr(peek64(r + uintptr(h.rNext)))
	}
	return out, nil
}

func (h *linHdr) regionByTid(t *testing.T, tid uint64) (linRegion, bool) {
	regs, err := h.allRegionsErr()
	if err != nil {
		t.Fatal(err)
	}
	return findTid(regs, tid)
}

func findTid(regs []linRegion, tid uint64) (linRegion, bool) {
	for _, r := range regs {
		if r.consitent && r.state != 0 && r.tid == tid {
			return r, true
		}
	}
	return linRegion{}, false
}

// self returns the calling goroutine's record as a reader finds it from the
// thread id. The caller must have locked its OS thread.
func (h *linHdr) self(t *testing.T) (linRegion, linRec) {
	t.Helper()
	reg, rec, err := h.selfErr()
	if err != nil {
		t.Fatal(err)
	}
	return reg, rec
}

// selfErr is self for goroutines other than the test's.
func (h *linHdr) selfErr() (linRegion, linRec, error) {
	tid := lineageTid()
	regs, err := h.allRegionsErr()
	if err != nil {
		return linRegion{}, linRec{}, err
	}
	reg, ok := findTid(regs, tid)
	if !ok {
		return reg, linRec{}, fmt.Errorf("no active region for tid %d", tid)
	}
	if reg.cur == 0 {
		return reg, linRec{}, fmt.Errorf("region of tid %d has no current record", tid)
	}
	rec, err := h.readRecErr(uintptr(reg.cur))
	if err != nil {
		return reg, rec, err
	}
	if got, want := rec.chain[0].goid, runtime.Goid(); got != want {
		return reg, rec, fmt.Errorf("region of tid %d names goroutine %d, running %d", tid, got, want)
	}
	return reg, rec, nil
}

func needLineage(t *testing.T) linHdr {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("test finds regions by Linux thread id")
	}
	h := readLinHdr(t)
	if h.flags&2 == 0 {
		t.Skip("lineage records disabled by GODEBUG")
	}
	return h
}

func TestLineageHeader(t *testing.T) {
	h := readLinHdr(t)
	want := map[string][2]uint32{
		"region_size": {peek32(h.addr + lineageabi.OffRegionSize), 64},
		"rSeq":        {h.rSeq, 0}, "rTid": {h.rTid, 8}, "rCur": {h.rCur, 16}, "rNext": {h.rNext, 24},
		"rMid": {peek32(h.addr + lineageabi.OffRegionMid), 32}, "rState": {h.rState, 40},
		"cSeq": {h.cSeq, 0}, "cG": {peek32(h.addr + lineageabi.OffRecG), 8}, "cGoid": {h.cGoid, 16},
		"cParent": {h.cParent, 24}, "cNanc": {h.cNanc, 32}, "cNstk": {h.cNstk, 44},
		"cFlags": {h.cFlags, 34}, "cDepth": {h.cDepth, 36}, "cSite": {h.cSite, 56},
		"cChanges": {peek32(h.addr + lineageabi.OffRecChanges), 40},
		"cAnc":     {h.cAnc, 64}, "aSize": {h.aSize, 8}, "aStart": {h.aStart, 0}, "aGopc": {h.aGopc, 4},
		"cStack":     {h.cStack, 64 + 8*h.maxDepth},
		"recordSize": {h.recordSize, 64 + 8*h.maxDepth + 8*h.maxStack},
		"ptr_size":   {peek32(h.addr + lineageabi.OffPtrSize), uint32(unsafe.Sizeof(uintptr(0)))},
	}
	for k, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %d, want %d", k, v[0], v[1])
		}
	}
	if h.maxDepth != 8 && !strings.Contains(os.Getenv("GODEBUG"), "lineage") {
		t.Errorf("default max_depth %d, want 8", h.maxDepth)
	}
	if h.maxDepth == 8 && h.maxStack == 0 && h.recordSize > 128 {
		t.Errorf("record_size %d at the default depth, want at most 128", h.recordSize)
	}
	if h.nregions == 0 || h.regions == 0 {
		t.Errorf("empty registry")
	}
	if text := runtime.LineageTextStart(); h.textBase != uint64(text) || text == 0 {
		t.Errorf("text_base %#x, want the text start %#x", h.textBase, text)
	}
}

// The header in the executable file equals the header in memory but for the
// run-time fields (doc/lineage-abi.md's *[rt]* marks, lineageabi.RunTime),
// and every offset and size a reader needs is in the file.
func TestLineageHeaderInFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF executable")
	}
	h, err := lineageabi.FindInExecutable() // compares file and memory
	if err != nil {
		t.Fatal(err)
	}
	// The file's static part is the memory's (checked above): it must
	// hold every offset, not zeros. Fields that are 0 by the layout:
	zero := map[uintptr]bool{
		lineageabi.OffRegionSeq: true, lineageabi.OffRecSeq: true, lineageabi.OffAncStart: true,
		lineageabi.OffBlockNext: true, lineageabi.OffLabelsList: true, lineageabi.OffLabelKey: true,
		lineageabi.OffGStackLo: true,
	}
	a := uintptr(h)
	for off := uintptr(lineageabi.OffVersion); off < lineageabi.OffStatusMap; off += 4 {
		if lineageabi.IsRunTime(int(off)) || zero[off] {
			continue
		}
		if peek32(a+off) == 0 {
			t.Errorf("header field at %d is 0", off)
		}
	}
	for off := uintptr(lineageabi.OffGLabels); off <= lineageabi.OffLabelValue; off += 4 {
		if !zero[off] && peek32(a+off) == 0 {
			t.Errorf("header field at %d is 0", off)
		}
	}
	// A file header that differs from memory outside the run-time fields
	// is refused.
	mem := lineageabi.Bytes(a, lineageabi.HeaderSize)
	file := slices.Clone(mem)
	for _, f := range lineageabi.RunTime {
		clear(file[f[0] : f[0]+f[1]])
	}
	if err := lineageabi.CompareFile(file, mem); err != nil {
		t.Fatalf("CompareFile of memory with its run-time fields cleared: %v", err)
	}
	file[lineageabi.OffGGoid]++
	if lineageabi.CompareFile(file, mem) == nil {
		t.Errorf("CompareFile accepts a changed off_g_goid")
	}
}

func lineageFnPC(f any) uint64 { return uint64(reflect.ValueOf(f).Pointer()) }

// funcAt names the function containing return address pc.
func funcAt(pc uint64) string {
	f := runtime.FuncForPC(uintptr(pc) - 1)
	if f == nil {
		return "?"
	}
	return f.Name()
}

type linResult struct {
	rec  linRec
	goid uint64
	err  error
}

// Tree: T -> A -> B -> C, where A and B exit, and A's g is reused for other
// goroutines, before C reads its chain.
func TestLineageChain(t *testing.T) {
	h := needLineage(t)
	if h.maxDepth < 4 {
		t.Skip("needs lineage >= 4")
	}
	// One P: an exited goroutine's g goes to that P's free list, from
	// which the next go statement takes it. With several, A's g may wait
	// on another P's list while this goroutine creates on its own.
	// (Not a deferred call: its wrapper would take the name the check of
	// the chain below expects of the go statement's, gowrap1.)
	procs := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	runtime.LockOSThread()
	_, me := h.self(t)
	runtime.UnlockOSThread()

	aRec := make(chan uintptr, 1)
	aGoid := make(chan uint64, 1)
	bGoid := make(chan uint64, 1)
	res := make(chan linResult, 1)
	var ok sync.WaitGroup
	ok.Add(1)
	goC := make(chan struct{})
	go lineageA(t, &h, goC, aRec, aGoid, bGoid, res)
	ra, ga := <-aRec, <-aGoid
	gb := <-bGoid
	// Wait for A to be gone and its g (record) reused by another goroutine.
	// A's g is on the P's free list, or on the scheduler's when the P's
	// overflowed, and g's that exited after A's lie before it: one
	// goroutine at a time would take the same g again and again. Hold
	// ever more goroutines alive at once, until one of them has A's g.
	reused := false
	for round := 0; round < 30 && !reused; round++ {
		reused = lineageHoldGoroutines(min(16<<round, 1<<16), func() bool {
			return h.readRec(t, ra).chain[0].goid != ga
		})
	}
	if !reused {
		t.Fatalf("A's record was never reused")
	}
	close(goC)
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Beyond the parent, ancestor entries carry no goid.
	want := []linEntry{{r.goid, lineageFnPC(lineageC), 0}, {gb, lineageFnPC(lineageB), 0}, {0, lineageFnPC(lineageA), 0}, me.chain[0]}
	want = append(want, me.chain[1:]...)
	if len(want) > int(h.maxDepth)+1 {
		want = want[:h.maxDepth+1]
	}
	for i := 2; i < len(want); i++ {
		want[i].goid = 0
	}
	if len(r.rec.chain) != len(want) {
		t.Fatalf("chain %v, want %d entries", r.rec.chain, len(want))
	}
	creators := []string{"lineageB", "lineageA", "TestLineageChain"}
	for i, e := range r.rec.chain {
		if e.goid != want[i].goid {
			t.Errorf("chain[%d] = goid %d, want goid %d", i, e.goid, want[i].goid)
		}
		if i < len(creators) {
			// go f(args) starts at a wrapper named after the creator.
			name := runtime.FuncForPC(uintptr(e.startpc)).Name()
			if e.startpc != want[i].startpc && !strings.HasSuffix(name, "."+creators[i]+".gowrap1") {
				t.Errorf("chain[%d] starts at %s (%#x), want %#x or a go wrapper in %s", i, name, e.startpc, want[i].startpc, creators[i])
			}
		} else if e.startpc != want[i].startpc {
			t.Errorf("chain[%d] startpc %#x, want %#x", i, e.startpc, want[i].startpc)
		}
		if i < len(creators) {
			if name := funcAt(e.gopc); !strings.HasSuffix(name, "."+creators[i]) {
				t.Errorf("chain[%d] created at %s, want %s", i, name, creators[i])
			}
		} else if e.gopc != want[i].gopc {
			t.Errorf("chain[%d] gopc %#x, want %#x", i, e.gopc, want[i].gopc)
		}
	}
	if r.rec.parent != gb {
		t.Errorf("parent_goid %d, want %d", r.rec.parent, gb)
	}
	if r.rec.depth != me.depth+3 {
		t.Errorf("depth %d, want %d", r.rec.depth, me.depth+3)
	}
}

// lineageHoldGoroutines starts n goroutines, reports check's result while
// all of them are alive, and returns once all have exited.
func lineageHoldGoroutines(n int, check func() bool) bool {
	var started, exited sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	exited.Add(n)
	for range n {
		go func() {
			started.Done()
			<-release
			exited.Done()
		}()
	}
	started.Wait()
	ok := check()
	close(release)
	exited.Wait()
	return ok
}

func lineageA(t *testing.T, h *linHdr, goC <-chan struct{}, aRec chan<- uintptr, aGoid, bGoid chan<- uint64, res chan<- linResult) {
	runtime.LockOSThread()
	reg, _, err := h.selfErr()
	runtime.UnlockOSThread()
	if err != nil {
		t.Error(err)
	}
	aRec <- uintptr(reg.cur)
	aGoid <- runtime.Goid()
	go lineageB(h, goC, bGoid, res)
}

func lineageB(h *linHdr, goC <-chan struct{}, bGoid chan<- uint64, res chan<- linResult) {
	bGoid <- runtime.Goid()
	<-goC
	go lineageC(h, res)
}

func lineageC(h *linHdr, res chan<- linResult) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := lineageTid()
	regs, err := h.allRegionsErr()
	if err != nil {
		res <- linResult{err: err}
		return
	}
	reg, ok := findTid(regs, tid)
	if !ok || reg.cur == 0 {
		res <- linResult{err: fmt.Errorf("no region/record for tid %d: %+v", tid, reg)}
		return
	}
	rec, err := h.readRecErr(uintptr(reg.cur))
	res <- linResult{rec: rec, goid: runtime.Goid(), err: err}
}

// A goroutine that moves between Ms is always the current record of the
// region of whatever thread it runs on, with the same chain.
func TestLineageMigrate(t *testing.T) {
	h := needLineage(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	var first []linEntry
	tids := map[uint64]bool{}
	checks := 0
	for i := 0; i < 2000 && (len(tids) < 3 || checks < 50); i++ {
		time.Sleep(20 * time.Microsecond)
		tid := lineageTid()
		reg, ok := h.regionByTid(t, tid)
		if lineageTid() != tid {
			continue // moved while reading
		}
		if !ok {
			t.Fatalf("no region for tid %d", tid)
		}
		if reg.cur == 0 {
			continue // preempted during the read
		}
		rec := h.readRec(t, uintptr(reg.cur))
		if rec.chain[0].goid != runtime.Goid() {
			continue // preempted during the read; another goroutine ran here
		}
		checks++
		tids[tid] = true
		if first == nil {
			first = rec.chain
		} else if !reflect.DeepEqual(first, rec.chain) {
			t.Fatalf("chain changed from %v to %v", first, rec.chain)
		}
	}
	if checks < 10 {
		t.Fatalf("only %d consistent reads", checks)
	}
	t.Logf("%d reads on %d threads", checks, len(tids))
}

// A locked goroutine that exits takes its thread with it; the region must
// then be retired (or reused for another thread), never left naming it.
func TestLineageLockedThreadExit(t *testing.T) {
	h := needLineage(t)
	type info struct {
		reg  linRegion
		goid uint64
	}
	ch := make(chan info)
	go func() {
		runtime.LockOSThread()
		reg, _, err := h.selfErr()
		if err != nil {
			t.Error(err)
		}
		ch <- info{reg, runtime.Goid()}
		// exit locked: the thread exits
	}()
	in := <-ch
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := h.readRegion(in.reg.addr)
		if r.consitent && (r.state == 0 || r.tid != in.reg.tid) {
			if r.state == 0 && (r.tid != 0 || r.cur != 0) {
				t.Fatalf("free region %+v has tid or cur", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("region of exited thread %d still active: %+v", in.reg.tid, r)
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := h.regionByTid(t, in.reg.tid); ok {
		t.Fatalf("exited thread %d still registered", in.reg.tid)
	}
}

// A chain deeper than max_depth keeps the nearest ancestors and says so.
func TestLineageTruncation(t *testing.T) {
	h := needLineage(t)
	n := int(h.maxDepth) + 4
	goids := make([]uint64, 0, n)
	res := make(chan linRec)
	var spawn func(level int)
	spawn = func(level int) {
		goids = append(goids, runtime.Goid())
		if level == n {
			runtime.LockOSThread()
			_, r, err := h.selfErr()
			runtime.UnlockOSThread()
			if err != nil {
				t.Error(err)
			}
			res <- r
			return
		}
		go spawn(level + 1)
	}
	runtime.LockOSThread()
	_, me := h.self(t)
	runtime.UnlockOSThread()
	go spawn(1)
	r := <-res
	if len(r.chain) != int(h.maxDepth)+1 {
		t.Fatalf("chain has %d entries, want %d", len(r.chain), h.maxDepth+1)
	}
	if r.flags&1 == 0 {
		t.Errorf("truncation flag not set: flags %#x", r.flags)
	}
	if r.depth != me.depth+uint32(n) {
		t.Errorf("depth %d, want %d", r.depth, me.depth+uint32(n))
	}
	if r.chain[0].goid != goids[len(goids)-1] || r.chain[1].goid != goids[len(goids)-2] {
		t.Errorf("chain goids %d, %d, want %d, %d", r.chain[0].goid, r.chain[1].goid, goids[len(goids)-1], goids[len(goids)-2])
	}
	// The nearest ancestors are kept: all of them, as the goroutine
	// itself, spawn's goroutines created in spawn (the farthest, level
	// 1, was created in the test).
	for i, e := range r.chain[1:] {
		if e.startpc != r.chain[0].startpc || e.gopc != r.chain[0].gopc || e.gopc == 0 {
			t.Errorf("chain[%d] = %#x created at %#x, want %#x created at %#x", i+1, e.startpc, e.gopc, r.chain[0].startpc, r.chain[0].gopc)
		}
	}
}

// A g struct whose previous goroutine created children is reused by a
// goroutine of another depth: the children of the new one must get its
// depth, flags and ancestors, not what the old one handed its children.
func TestLineageReusedParent(t *testing.T) {
	h := needLineage(t)
	// One P, so the dead gs of the chain are on the free list the new
	// goroutines take theirs from.
	// (Not a deferred call: its wrapper would take the name the check of
	// the chain below expects of the go statement's, gowrap1.)
	procs := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	n := int(h.maxDepth) + 2 // deep enough to be truncated
	old := make(map[uintptr]bool)
	done := make(chan struct{})
	var spawn func(level int)
	spawn = func(level int) {
		runtime.LockOSThread()
		reg, _, err := h.selfErr()
		runtime.UnlockOSThread()
		if err != nil {
			t.Error(err)
		}
		old[uintptr(reg.cur)] = true
		if level == n {
			close(done)
			return
		}
		child := make(chan struct{})
		go func() { close(child) }()
		<-child
		go spawn(level + 1)
	}
	go spawn(1)
	<-done
	type result struct {
		y, z linRec
		err  error
	}
	reused := 0
	for i := 0; i < 100000 && reused < 3; i++ {
		res := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			_, y, err := h.selfErr()
			runtime.UnlockOSThread()
			if err != nil || !old[y.addr] {
				res <- result{y: y, err: err}
				return
			}
			go func() {
				runtime.LockOSThread()
				_, z, err := h.selfErr()
				runtime.UnlockOSThread()
				res <- result{y: y, z: z, err: err}
			}()
		}()
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.z.addr == 0 {
			continue
		}
		reused++
		y, z := r.y, r.z
		if z.depth != y.depth+1 {
			t.Errorf("child of a goroutine at depth %d on a reused g has depth %d", y.depth, z.depth)
		}
		want := h.childAncestors(y.chain)
		if !reflect.DeepEqual(z.chain[1:], want) {
			t.Errorf("child's ancestors %v, want %v", z.chain[1:], want)
		}
		if trunc := z.depth > uint32(len(z.chain)-1); (z.flags&1 != 0) != trunc {
			t.Errorf("flags %#x with depth %d and %d ancestors", z.flags, z.depth, len(z.chain)-1)
		}
		if z.parent != y.chain[0].goid {
			t.Errorf("parent_goid %d, want %d", z.parent, y.chain[0].goid)
		}
	}
	if reused == 0 {
		t.Fatalf("no g struct of the deep chain was reused")
	}
}

// On amd64 the record's sequence counter is set odd and then even with plain
// increments of memory (lineageNewg), which only the loads between them keep
// the compiler from merging. If it ever merged them, readers would accept
// torn records: require both increments in the compiled lineageNewg (a
// reused g struct's record takes both; a new g struct's record is handed
// out odd and takes the second).
func TestLineageSeqStores(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("plain sequence stores are amd64 only")
	}
	testenv.MustHaveGoBuild(t)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	out, err := testenv.Command(t, testenv.GoToolPath(t), "tool", "objdump", "-s", `^runtime\.lineageNewg$`, exe).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	// seq is at offset 0 of the record: count the increments of a word
	// at offset 0 of a register.
	incs := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		args := strings.Join(f[4:], " ")
		switch {
		case f[3] == "INCQ" && strings.HasPrefix(args, "0("):
			incs++
		case f[3] == "ADDQ" && strings.HasPrefix(args, "$0x1, 0("):
			incs++
		}
	}
	if incs != 2 {
		t.Errorf("lineageNewg increments a sequence counter %d times, want 2 (odd, then even):\n%s", incs, out)
	}
}

// Records are per g struct: creating and retiring millions of goroutines
// must not grow lineage memory beyond what the g structs themselves need.
func TestLineageMemoryBound(t *testing.T) {
	h := readLinHdr(t)
	if h.flags&2 == 0 {
		t.Skip("lineage records disabled by GODEBUG")
	}
	total := 2_000_000
	if testing.Short() {
		total = 300_000
	}
	const batch = 1000
	recs0, allg0 := runtime.LineageRecords(), runtime.AllgLen()
	var wg sync.WaitGroup
	for i := 0; i < total; i += batch {
		wg.Add(batch)
		for j := 0; j < batch; j++ {
			go wg.Done()
		}
		wg.Wait()
	}
	recs, allg := runtime.LineageRecords()-recs0, runtime.AllgLen()-allg0
	t.Logf("%d goroutines: %d new records, %d new g structs, record size %d", total, recs, allg, h.recordSize)
	if recs > int64(allg) {
		t.Errorf("%d records for %d new g structs", recs, allg)
	}
	if runtime.LineageRecords() > int64(runtime.AllgLen()) {
		t.Errorf("%d records for %d g structs", runtime.LineageRecords(), runtime.AllgLen())
	}
	if allg > 100*batch {
		t.Errorf("g structs grew by %d for batches of %d", allg, batch)
	}
}

// A reader that finds the header in a stripped executable file and checks
// the creation stack captured at the go statement.
func TestLineageStrippedStack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("test reads ELF")
	}
	// The reader finds the header in the file and adds the load bias of a
	// position-independent executable (lineage ABI, section 2).
	for _, flags := range [][]string{
		{"-ldflags=-s -w"},
		{"-buildmode=pie", "-ldflags=-s -w"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			if flags[0] == "-buildmode=pie" && !lineagePIE() {
				t.Skip("no PIE on", runtime.GOOS, runtime.GOARCH, "or with -race")
			}
			exe, err := buildTestProg(t, "testprog", flags...)
			if err != nil {
				t.Fatal(err)
			}
			out := runBuiltTestProg(t, exe, "LineageStack", "GODEBUG=lineagestack=16")
			if strings.HasPrefix(out, "SKIP") {
				t.Skip(out)
			}
			if out != "OK\n" {
				t.Fatal(out)
			}
		})
	}
}

// lineagePIE reports whether the test programs can be built as PIEs:
// buildTestProg adds -race to a race-enabled test's builds, and -race
// builds no PIE on linux/amd64.
func lineagePIE() bool {
	return platform.BuildModeSupported(runtime.Compiler, "pie", runtime.GOOS, runtime.GOARCH) && !race.Enabled
}

// Callbacks from a C-created thread run on an extra M, whose region must
// name the thread and the callback goroutine and be freed when it exits.
func TestLineageCgoCallback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("test reads ELF")
	}
	testenv.MustHaveCGO(t)
	out := runTestProg(t, "testprogcgo", "LineageCgoCallback")
	if out != "OK\n" {
		t.Fatal(out)
	}
	// A cgo PIE is linked externally, where the mapping that covers the
	// header can be the read-only RELRO part: the reader's load bias must
	// not depend on which mapping it looks at.
	if !lineagePIE() {
		return
	}
	exe, err := buildTestProg(t, "testprogcgo", "-buildmode=pie")
	if err != nil {
		t.Fatal(err)
	}
	if out := runBuiltTestProg(t, exe, "LineageCgoCallback"); out != "OK\n" {
		t.Fatalf("PIE: %s", out)
	}
}

// Between callbacks a C thread keeps its extra M and region but runs no
// goroutine: the region's cur must say so (lineage ABI, section 7).
func TestLineageCgoCallbackReturn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("test reads ELF")
	}
	testenv.MustHaveCGO(t)
	out := runTestProg(t, "testprogcgo", "LineageCgoCallbackReturn")
	if out != "OK\n" {
		t.Fatal(out)
	}
}
