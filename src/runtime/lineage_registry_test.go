// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/testdata/lineageabi"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The registry (doc/lineage-abi.md, "Registry"), read as an external reader
// would: by the header's offsets, from raw memory.

// linReg is the registry part of the header, at the documented offsets.
type linReg struct {
	blocks, nblocks                            uint64
	blockHdr, bNext, bNrec, bUsed, rG          uint32
	gGoid, gStatus, gTrans, gWait, gSince      uint32
	gSchedSP, gSchedPC, gSchedBP               uint32
	gSysSP, gSysPC, gSysBP, gLo, gHi, gWaiting uint32
	sWaitlink, sElem, sC, sIsSelect            uint32
	scan                                       uint32
	statusMap                                  [16]uint8
	reasons                                    uintptr
	nReasons, strSize                          uint32
}

func readLinReg(t *testing.T, h linHdr) linReg {
	t.Helper()
	if h.flags&(1<<4) == 0 {
		t.Fatalf("registry flag not set: flags %#x", h.flags)
	}
	a := h.addr
	u := func(off uintptr) uint32 { return peek32(a + off) }
	r := linReg{
		blocks: peek64(a + lineageabi.OffBlocks), nblocks: peek64(a + lineageabi.OffNBlocks),
		blockHdr: u(lineageabi.OffBlockHdrSize), bNext: u(lineageabi.OffBlockNext), bNrec: u(lineageabi.OffBlockNrec),
		bUsed: u(lineageabi.OffBlockUsed), rG: u(lineageabi.OffRecG),
		gGoid: u(lineageabi.OffGGoid), gStatus: u(lineageabi.OffGStatus), gTrans: u(lineageabi.OffGTransitions),
		gWait: u(lineageabi.OffGWaitReason), gSince: u(lineageabi.OffGWaitSince),
		gSchedSP: u(lineageabi.OffGSchedSP), gSchedPC: u(lineageabi.OffGSchedPC), gSchedBP: u(lineageabi.OffGSchedBP),
		gSysSP: u(lineageabi.OffGSyscallSP), gSysPC: u(lineageabi.OffGSyscallPC), gSysBP: u(lineageabi.OffGSyscallBP),
		gLo: u(lineageabi.OffGStackLo), gHi: u(lineageabi.OffGStackHi), gWaiting: u(lineageabi.OffGWaiting),
		sWaitlink: u(lineageabi.OffSudogWaitlink), sElem: u(lineageabi.OffSudogElem), sC: u(lineageabi.OffSudogC),
		sIsSelect: u(lineageabi.OffSudogIsSelect), scan: u(lineageabi.OffStatusScan),
		reasons: uintptr(peek64(a + lineageabi.OffWaitReasons)), nReasons: u(lineageabi.OffNWaitReasons),
		strSize: u(lineageabi.OffStringSize),
	}
	copy(r.statusMap[:], lineageabi.Bytes(a+lineageabi.OffStatusMap, 16))
	return r
}

// linG is one goroutine as the registry shows it.
type linG struct {
	goid, parent     uint64
	recGoid          uint64 // the record's goid, read in the same window
	status           uint8  // ABI status code
	reason           string
	schedPC, schedBP uint64
	waitChans        []uint64
	waitElem         uint64
	frames           []string
}

// allRecords walks every block and every handed-out record of the registry.
func (r linReg) allRecords(t *testing.T, h linHdr) []uintptr {
	var recs []uintptr
	b := uintptr(peek64(uintptr(unsafe.Pointer(&r.blocks))))
	for n := uint64(0); b != 0; n++ {
		if n >= r.nblocks {
			t.Fatalf("block list longer than nblocks %d", r.nblocks)
		}
		used, nrec := peek32(b+uintptr(r.bUsed)), peek32(b+uintptr(r.bNrec))
		if used > nrec {
			t.Fatalf("block %#x: used %d > nrec %d", b, used, nrec)
		}
		for i := uint32(0); i < used; i++ {
			recs = append(recs, b+uintptr(r.blockHdr)+uintptr(i)*uintptr(h.recordSize))
		}
		b = uintptr(peek64(b + uintptr(r.bNext)))
	}
	return recs
}

func (r linReg) str(i uint8) string {
	if uint32(i) >= r.nReasons {
		return fmt.Sprintf("reason %d", i)
	}
	e := r.reasons + uintptr(i)*uintptr(r.strSize)
	p, n := uintptr(peek64(e)), peek64(e+8)
	return string(lineageabi.Bytes(p, int(n)))
}

// readG reads the goroutine of record rec by the consistency rule: the
// record's seq and the g's transition counter unchanged across the read.
func (r linReg) readG(h linHdr, rec uintptr) (linG, bool) {
	for try := 0; try < 100; try++ {
		s1 := peek64(rec + uintptr(h.cSeq))
		if s1 == 0 || s1&1 != 0 {
			continue
		}
		gp := uintptr(peek64(rec + uintptr(r.rG)))
		t1 := peek32(gp + uintptr(r.gTrans))
		st := peek32(gp+uintptr(r.gStatus)) &^ r.scan
		lg := linG{
			goid:    peek64(gp + uintptr(r.gGoid)),
			parent:  peek64(rec + uintptr(h.cParent)),
			recGoid: peek64(rec + uintptr(h.cGoid)),
			status:  0xff,
			reason:  r.str(lineageabi.P8(gp + uintptr(r.gWait))),
			schedPC: peek64(gp + uintptr(r.gSchedPC)),
			schedBP: peek64(gp + uintptr(r.gSchedBP)),
		}
		if st < 16 {
			lg.status = r.statusMap[st]
		}
		for s, n := uintptr(peek64(gp+uintptr(r.gWaiting))), 0; s != 0 && n < 1000; n++ {
			if c := peek64(s + uintptr(r.sC)); c != 0 {
				lg.waitChans = append(lg.waitChans, c)
			} else {
				lg.waitElem = peek64(s + uintptr(r.sElem))
			}
			s = uintptr(peek64(s + uintptr(r.sWaitlink)))
		}
		if peek32(gp+uintptr(r.gTrans)) == t1 && peek64(rec+uintptr(h.cSeq)) == s1 {
			return lg, true
		}
	}
	return linG{}, false
}

// fpStack walks a parked goroutine's frames from its saved pc and bp and
// returns the function names, as an external reader would print them.
func fpStack(pc, bp uint64) []string {
	pcs := []uintptr{uintptr(pc) + 1} // a resume PC, not a return address
	for n := 0; bp != 0 && n < 100; n++ {
		ret := peek64(uintptr(bp) + 8)
		if ret == 0 {
			break
		}
		pcs = append(pcs, uintptr(ret))
		bp = peek64(uintptr(bp))
	}
	var names []string
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		// The dump shows no runtime frames of goroutines other than
		// the caller's.
		if !strings.HasPrefix(f.Function, "runtime.") {
			names = append(names, f.Function)
		}
		if !more {
			return names
		}
	}
}

// dumpG is one goroutine of the program's own dump (runtime.Stack, all).
type dumpG struct {
	reason string
	parent uint64
	funcs  []string
}

var dumpHead = regexp.MustCompile(`^goroutine (\d+) (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[([^,\]]+)`)
var dumpCreated = regexp.MustCompile(`^created by .* in goroutine (\d+)`)

func parseDump(dump string) map[uint64]dumpG {
	gs := map[uint64]dumpG{}
	for _, block := range strings.Split(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		m := dumpHead.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		id, _ := strconv.ParseUint(m[1], 10, 64)
		d := dumpG{reason: m[2]}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") {
				continue
			}
			if c := dumpCreated.FindStringSubmatch(l); c != nil {
				d.parent, _ = strconv.ParseUint(c[1], 10, 64)
				break
			}
			if i := strings.LastIndex(l, "("); i > 0 {
				d.funcs = append(d.funcs, l[:i])
			}
		}
		gs[id] = d
	}
	return gs
}

// TestLineageRegistryAllGoroutines parks goroutines in many states and
// checks every one against the program's own goroutine dump: status, wait
// reason, creator, the frames of a frame-pointer walk from sched.bp, and
// the object it waits on.
func TestLineageRegistryAllGoroutines(t *testing.T) {
	h := needLineage(t)
	var (
		mu       sync.Mutex
		wg, done sync.WaitGroup
		ch       = make(chan int)
		ch2      = make(chan int)
		ch3      = make(chan int)
		cond     = sync.NewCond(&sync.Mutex{})
		release  = make(chan struct{})
		parked   = make(chan struct{}, 16)
		started  sync.WaitGroup
	)
	mu.Lock()
	wg.Add(1)
	spawn := func(f func()) {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			f()
		}()
	}
	spawn(func() { <-ch })
	spawn(func() { ch2 <- 1 })
	spawn(func() {
		select {
		case <-ch:
		case <-ch3:
		}
	})
	spawn(func() { mu.Lock(); mu.Unlock() })
	spawn(func() { wg.Wait() })
	spawn(func() { cond.L.Lock(); parked <- struct{}{}; cond.Wait(); cond.L.Unlock() })
	spawn(func() { <-release })
	started.Wait()
	<-parked
	// Let every goroutine reach its parking point.
	waitParked(t, 7)

	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	reg := readLinReg(t, h)
	got := map[uint64]linG{}
	for _, rec := range reg.allRecords(t, h) {
		g, ok := reg.readG(h, rec)
		if !ok {
			t.Fatalf("record %#x kept changing", rec)
		}
		if g.status == 5 || g.status == 0 { // dead or idle: a free g
			continue
		}
		// Walk the stack now, while the goroutine is parked.
		g.frames = fpStack(g.schedPC, g.schedBP)
		got[g.goid] = g
	}
	dump := parseDump(string(buf))

	// Release everything before any Fatal.
	close(release)
	close(ch)
	close(ch3)
	<-ch2
	mu.Unlock()
	wg.Done()
	cond.L.Lock()
	cond.Broadcast()
	cond.L.Unlock()
	done.Wait()

	chanAddr := func(c any) uint64 { return uint64(reflectValuePointer(c)) }
	chans := []uint64{chanAddr(ch), chanAddr(ch2), chanAddr(ch3), chanAddr(release)}
	compared := 0
	me := uint64(runtime.Goid())
	for id, d := range dump {
		if d.parent != me {
			continue // not this test's: other tests' goroutines change under the reader
		}
		g, ok := got[id]
		if !ok {
			t.Errorf("goroutine %d [%s] of the dump missing from the registry", id, d.reason)
			continue
		}
		if g.status != 4 {
			t.Errorf("goroutine %d: status code %d, dump says %q", id, g.status, d.reason)
		}
		if !strings.HasPrefix(d.reason, g.reason) {
			t.Errorf("goroutine %d: wait reason %q, dump says %q", id, g.reason, d.reason)
		}
		if d.parent != 0 && g.parent != d.parent {
			t.Errorf("goroutine %d: parent %d, dump says %d", id, g.parent, d.parent)
		}
		if fs := g.frames; !slices.Equal(fs, d.funcs) {
			t.Errorf("goroutine %d [%s]: frame-pointer walk from sched.bp\n\t%q\ndump\n\t%q", id, d.reason, fs, d.funcs)
		}
		switch {
		case strings.HasPrefix(d.reason, "select"):
			if len(g.waitChans) != 2 {
				t.Errorf("goroutine %d [%s]: waits on %d channels, want 2", id, d.reason, len(g.waitChans))
			}
		case strings.HasPrefix(d.reason, "chan"):
			if len(g.waitChans) != 1 || !slices.Contains(chans, g.waitChans[0]) {
				t.Errorf("goroutine %d [%s]: waits on %#x, want one of %#x", id, d.reason, g.waitChans, chans)
			}
		case strings.HasPrefix(d.reason, "sync.Mutex.Lock"), strings.HasPrefix(d.reason, "sync.WaitGroup.Wait"), strings.HasPrefix(d.reason, "sync.Cond.Wait"):
			if g.waitElem == 0 || len(g.waitChans) != 0 {
				t.Errorf("goroutine %d [%s]: wait object %#x chans %#x, want a semaphore address", id, d.reason, g.waitElem, g.waitChans)
			}
		}
		compared++
	}
	if compared < 7 {
		t.Errorf("compared %d parked goroutines, want at least 7", compared)
	}
}

func reflectValuePointer(c any) uintptr {
	return (*[2]uintptr)(unsafe.Pointer(&c))[1]
}

// waitParked waits until at least n goroutines the caller created are
// blocked, by the program's own dump. Only the caller's count: goroutines
// other tests left parked would let it return while one of the caller's is
// still runnable.
func waitParked(t *testing.T, n int) {
	me := uint64(runtime.Goid())
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		parked := 0
		for _, d := range parseDump(string(buf[:runtime.Stack(buf, true)])) {
			if d.parent != me {
				continue // another test's goroutine, parked or not, says nothing of ours
			}
			for _, r := range []string{"chan ", "select", "sync."} {
				if strings.HasPrefix(d.reason, r) {
					parked++
				}
			}
		}
		if parked >= n {
			return
		}
	}
	t.Fatalf("goroutines did not park:\n%s", buf[:runtime.Stack(buf, true)])
}

// TestLineageRegistryChurn walks the registry over and over while other
// goroutines are created and exit as fast as they can, as a reader outside
// the process would: every walk must end within nblocks blocks, and every
// goroutine read consistently must be one whose record and g agree.
func TestLineageRegistryChurn(t *testing.T) {
	h := needLineage(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			for {
				select {
				case <-stop:
					inner.Wait()
					return
				default:
				}
				for range 32 {
					inner.Add(1)
					go func() { inner.Done() }()
				}
				inner.Wait()
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	walks, read, torn := 0, 0, 0
	for time.Now().Before(deadline) {
		reg := readLinReg(t, h) // blocks and nblocks change under the churn
		for _, rec := range reg.allRecords(t, h) {
			g, ok := reg.readG(h, rec)
			if !ok {
				torn++
				continue
			}
			if g.status == 5 || g.status == 0 {
				continue
			}
			read++
			if g.recGoid != g.goid {
				t.Errorf("record %#x names goroutine %d, its g %d", rec, g.recGoid, g.goid)
			}
		}
		walks++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d walks, %d goroutines read, %d torn", walks, read, torn)
	if walks < 10 || read == 0 {
		t.Errorf("%d walks, %d goroutines read", walks, read)
	}
}

// TestLineageRegistryFanOut starts goroutines that wait on a gate, as a
// fan-out does: most get g structs that never ran a goroutine, whose
// records lineageNewg takes from the M's block, so they come from several
// blocks. Each must be in the registry exactly once, its record naming its
// g, itself, its creator and its creator's ancestors.
func TestLineageRegistryFanOut(t *testing.T) {
	h := needLineage(t)
	runtime.LockOSThread() // h.self finds the creator by its thread
	defer runtime.UnlockOSThread()
	_, me := h.self(t)
	const n = 5*64 + 3
	allg0 := runtime.AllgLen()
	gate := make(chan struct{})
	goids := make(chan uint64, n)
	var done sync.WaitGroup
	release := sync.OnceFunc(func() { close(gate); done.Wait() })
	defer release() // before any Fatal returns
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			goids <- uint64(runtime.Goid())
			<-gate
		}()
	}
	mine := map[uint64]int{}
	for range n {
		mine[<-goids] = 0
	}
	fresh := runtime.AllgLen() - allg0

	reg := readLinReg(t, h)
	type found struct {
		rec linRec
		g   linG
	}
	var recs []found
	blocks := map[uintptr]bool{} // blocks holding this test's records
	b := uintptr(reg.blocks)
	for nb := uint64(0); b != 0; nb++ {
		if nb >= reg.nblocks {
			t.Fatalf("block list longer than nblocks %d", reg.nblocks)
		}
		used := peek32(b + uintptr(reg.bUsed))
		for i := uint32(0); i < used; i++ {
			rec := b + uintptr(reg.blockHdr) + uintptr(i)*uintptr(h.recordSize)
			g, ok := reg.readG(h, rec)
			if !ok {
				t.Errorf("record %#x kept changing", rec)
				continue
			}
			if _, ok := mine[g.goid]; !ok || g.status == 5 || g.status == 0 {
				continue
			}
			mine[g.goid]++
			blocks[b] = true
			r, err := h.readRecErr(rec)
			if err != nil {
				t.Error(err)
				continue
			}
			recs = append(recs, found{r, g})
		}
		b = uintptr(peek64(b + uintptr(reg.bNext)))
	}
	release()

	for id, c := range mine {
		if c != 1 {
			t.Errorf("goroutine %d is in the registry %d times, want 1", id, c)
		}
	}
	want := h.childAncestors(me.chain)
	for _, f := range recs {
		r, g := f.rec, f.g
		if r.chain[0].goid != g.goid || g.recGoid != g.goid {
			t.Errorf("record %#x names goroutine %d, its g %d", r.addr, r.chain[0].goid, g.goid)
		}
		if r.parent != me.chain[0].goid {
			t.Errorf("goroutine %d: parent %d, want %d", g.goid, r.parent, me.chain[0].goid)
		}
		if !slices.Equal(r.chain[1:], want) {
			t.Errorf("goroutine %d: ancestors %v, want %v", g.goid, r.chain[1:], want)
		}
		if r.depth != me.depth+1 {
			t.Errorf("goroutine %d: depth %d, want %d", g.goid, r.depth, me.depth+1)
		}
	}
	t.Logf("%d goroutines, %d on new g structs, %d blocks", n, fresh, len(blocks))
}

// TestLineageRecordChanges: a record's change count (off_rec_changes)
// moves when its goroutine starts running, not with its other status
// changes (its g's transition count does): it stays put while the
// goroutine stays parked, and while it is woken but has not run yet.
func TestLineageRecordChanges(t *testing.T) {
	h := needLineage(t)
	// One P: a goroutine this one wakes waits for it to block.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	off := uintptr(peek32(h.addr + lineageabi.OffRecChanges))
	wake, goids := make(chan struct{}), make(chan uint64)
	defer close(wake)
	go func() {
		goids <- runtime.Goid()
		for range wake {
		}
	}()
	goid := <-goids
	reg := readLinReg(t, h) // after the go statement: the blocks it took a record from
	var rec, gp uintptr
	for _, r := range reg.allRecords(t, h) {
		if uint64(peek64(r+uintptr(h.cGoid))) == goid {
			rec, gp = r, uintptr(peek64(r+uintptr(reg.rG)))
		}
	}
	if rec == 0 {
		t.Fatalf("goroutine %d not in the registry", goid)
	}
	// parked waits for the goroutine to park in a channel receive and
	// returns its counts once they hold still.
	parked := func() (changes, transitions uint32) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			c, tr := peek32(rec+off), peek32(gp+uintptr(reg.gTrans))
			g, ok := reg.readG(h, rec)
			if ok && g.status == 4 && peek32(rec+off) == c && peek32(gp+uintptr(reg.gTrans)) == tr {
				return c, tr
			}
		}
		t.Fatalf("goroutine %d did not park", goid)
		return 0, 0
	}
	c1, t1 := parked()
	time.Sleep(10 * time.Millisecond)
	if c, tr := parked(); c != c1 || tr != t1 {
		t.Errorf("parked goroutine: changes %d -> %d, transitions %d -> %d, want no change", c1, c, t1, tr)
	}
	wake <- struct{}{} // runnable; it runs when this goroutine blocks
	if g, ok := reg.readG(h, rec); ok && g.status == 1 {
		if c, tr := peek32(rec+off), peek32(gp+uintptr(reg.gTrans)); c != c1 || tr == t1 {
			t.Errorf("goroutine woken, not yet run: changes %d -> %d, transitions %d -> %d; want the same changes, more transitions", c1, c, t1, tr)
		}
	}
	// Running and parked again (the sleeps in parked let it run).
	c2, t2 := parked()
	for deadline := time.Now().Add(10 * time.Second); c2 == c1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		c2, t2 = parked()
	}
	// Each run is at least three status changes (woken, running, parked)
	// and one change count.
	if c2 == c1 || 3*(c2-c1) > t2-t1 {
		t.Errorf("goroutine woken and parked again: changes %d -> %d, transitions %d -> %d; want changes up by at least 1, at most a third of transitions", c1, c2, t1, t2)
	}
}
