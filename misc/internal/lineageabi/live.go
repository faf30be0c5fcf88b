package lineageabi

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"fpsafe.dev/misc/internal/target"
)

// Reading the registry of a process that keeps running (doc/lineage-abi.md,
// section 13, reader procedure): nothing is stopped, so every goroutine is
// read under the consistency rule, and the reads are batched so that a
// read of many goroutines costs a few system calls per batch, not several
// per goroutine.

// VecMem is a Mem that reads many ranges in one call (target.VecMem).
type VecMem = target.VecMem

// readV reads the ranges with m.ReadV, or one by one.
func readV(m Mem, bufs [][]byte, addrs []uint64, errs []error) { target.ReadV(m, bufs, addrs, errs) }

// LiveBatch is how many goroutines ReadLive reads together: each phase of a
// batch is one vectored read of at most 2*LiveBatch ranges (the kernel
// takes 1024).
const LiveBatch = 128

// LiveRetries bounds the reads of one goroutine that keeps changing.
const LiveRetries = 4

// LiveStats counts what a read of a running process met.
type LiveStats struct {
	Goroutines int // read consistently
	Retried    int // re-reads of goroutines that changed while read
	Torn       int // goroutines that kept changing: left out
	Calls      int // vectored reads
	Sudogs     int // sudogs read: one per goroutine waiting, one per case of a select
}

// Visit is called by ReadLive for each batch of goroutines, between the
// reads of their g fields and records and the re-reads that validate them:
// it reads what else it needs of each goroutine (its stack) from the
// running process. Its result for gs[i] is kept if gs[i] turns out
// unchanged, and dropped (and gs[i] read again) if not. gs and the
// goroutines are reused by the next batch: visit copies what it keeps.
type Visit[T any] func(gs []*Goroutine) []T

// ReadLive reads every goroutine of the registry from a process that keeps
// running. Batches of goroutines are read by up to LiveReaders goroutines
// at once, each with its own visit (from newVisit; nil: none), called for
// each batch it reads. Each goroutine is read by the ABI's rule, extended
// to what visit reads:
//
//  1. the record's seq (with the block), g and change count (C1), then,
//     in a separate read, the g's transition counter (T1);
//  2. the g's fields and the record, then the sudogs it waits on;
//  3. visit (its stack);
//  4. the g's fields again, with the transition counter (T2), and the
//     record's seq and change count (C2).
//
// The goroutine is kept if T1 == T2, C1 == C2, seq is unchanged and even, and the
// g's published fields (status, scan bit, saved registers, stack bounds,
// wait list) are the same in 2 and 4: a goroutine cannot run without a
// status change, and the GC moves a parked goroutine's stack (shrinking
// it) only under its scan bit and with new bounds. Otherwise it is read
// again, up to LiveRetries times, and then counted as torn.
//
// The result is not a snapshot (section 13, reader procedure, step 5):
// each goroutine is consistent on its own, at its own instant. Its order
// is unspecified.
func ReadLive[T any](v *View, newVisit func() Visit[T]) ([]Goroutine, []T, LiveStats, error) {
	var (
		gs  []Goroutine
		out []T
	)
	st, err := ReadLiveEach(v, newVisit, func(n int) {
		gs, out = make([]Goroutine, 0, n), make([]T, 0, n)
	}, func(g *Goroutine, res T) {
		cp := *g
		cp.Record = g.Record.Clone()
		gs, out = append(gs, cp), append(out, res)
	})
	return gs, out, st, err
}

// ReadLiveEach is ReadLive for a reader that converts each goroutine as it
// comes instead of keeping the reader's: keep is called, one call at a
// time, with each goroutine read consistently and visit's result, after
// sized, which is told how many records the read will visit. The
// goroutine's Record is reused once keep returns (keep copies what it
// keeps of it); the rest of the goroutine is keep's. Reading ten thousand
// goroutines this way allocates a few megabytes less than ReadLive, pages
// a one-shot reader would fault in.
func ReadLiveEach[T any](v *View, newVisit func() Visit[T], sized func(n int), keep func(g *Goroutine, res T)) (LiveStats, error) {
	var st LiveStats
	addrs, err := v.recordAddrs(&st, nil, nil)
	if err != nil {
		return st, err
	}
	sized(len(addrs))
	err = readLive(v, addrs, newVisit, &st, nil, liveSink[T]{keep: func(g *Goroutine, res T, _ uint32) {
		st.Goroutines++
		keep(g, res)
	}, transient: true})
	return st, err
}

// LiveReaders bounds the goroutines that read batches at once (and the
// CPUs a read takes from the machine): at most GOMAXPROCS.
const LiveReaders = 4

// A liveReader is one goroutine reading batches.
type liveReader[T any] struct {
	visit Visit[T]
	ar    arena
	st    LiveStats
	again []uint64
	err   error
}

// A liveSink takes what readLive found, one call at a time.
type liveSink[T any] struct {
	// keep takes a goroutine read consistently, with visit's result and
	// its record's change count (off_rec_changes), read before anything
	// else of the goroutine.
	keep func(g *Goroutine, res T, changes uint32)
	// free, if not nil, takes a record whose g is free (dead or idle) and
	// the record's change count before the g's status was read.
	free func(rec, gp uint64, changes uint32)
	// transient: keep copies what it keeps of a goroutine's record, which
	// is reused afterwards (ReadLiveEach).
	transient bool
}

// readLive reads the goroutines of the records at addrs, with retries, and
// gives each to sink. pool, if not nil, keeps the readers (their buffers)
// from one read to the next; each read gives them visits of its own.
func readLive[T any](v *View, addrs []uint64, newVisit func() Visit[T], st *LiveStats, pool *[]*liveReader[T], sink liveSink[T]) error {
	var mu sync.Mutex
	locked := liveSink[T]{keep: func(g *Goroutine, res T, changes uint32) {
		mu.Lock()
		defer mu.Unlock()
		sink.keep(g, res, changes)
	}, transient: sink.transient}
	if sink.free != nil {
		locked.free = func(rec, gp uint64, t uint32) {
			mu.Lock()
			defer mu.Unlock()
			sink.free(rec, gp, t)
		}
	}
	if pool == nil {
		pool = new([]*liveReader[T])
	}
	for _, r := range *pool {
		r.visit, r.st = nil, LiveStats{}
	}
	defer func() {
		for _, r := range *pool {
			st.Calls += r.st.Calls
			st.Sudogs += r.st.Sudogs
			r.visit = nil
		}
	}()
	for try := 0; len(addrs) > 0; try++ {
		if try > LiveRetries {
			st.Torn += len(addrs)
			break
		}
		if try > 0 {
			st.Retried += len(addrs)
		}
		// A goroutine that changed during its batch's read is read again
		// in smaller batches, which read it in less time.
		size := LiveBatch
		if try > 0 {
			size = max(1, LiveBatch>>(4*try))
		}
		var batches [][]uint64
		for len(addrs) > 0 {
			n := min(len(addrs), size)
			batches, addrs = append(batches, addrs[:n]), addrs[n:]
		}
		n := min(runtime.GOMAXPROCS(0), LiveReaders, len(batches))
		for len(*pool) < n {
			*pool = append(*pool, &liveReader[T]{})
		}
		readers := (*pool)[:n]
		for _, r := range readers {
			if r.visit == nil && newVisit != nil {
				r.visit = newVisit()
			}
		}
		var next atomic.Int64
		var failed atomic.Bool
		var wg sync.WaitGroup
		for i, r := range readers {
			work := func() {
				for !failed.Load() {
					if err := v.canceled(); err != nil {
						r.err = err
						failed.Store(true)
						return
					}
					b := int(next.Add(1) - 1)
					if b >= len(batches) {
						return
					}
					again, err := readLiveBatch(v, batches[b], r.visit, &r.st, &r.ar, locked)
					if err != nil {
						r.err = err
						failed.Store(true)
						return
					}
					r.again = append(r.again, again...)
				}
			}
			if i == n-1 {
				work() // the last reader is this goroutine
			} else {
				wg.Go(work)
			}
		}
		wg.Wait()
		var err error
		for _, r := range readers {
			if r.err != nil && err == nil {
				err = r.err
			}
			addrs = append(addrs, r.again...)
			r.err, r.again = nil, r.again[:0]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// A Cache keeps, from one read of a process to the next (a profile's
// ticks), each goroutine's last consistent reading and visit's result,
// by record. The runtime increments a record's change count each time its
// goroutine starts running (and when its g struct starts a new goroutine),
// not at every status change: a goroutine whose count is the same as when
// it was read parked (waiting) has not run since, so it keeps its frames
// (a stack the GC moves or shrinks keeps its frames), and its reading is
// reused for the cost of reading that count; its saved SP and stack
// bounds are the ones it had when read. A goroutine woken since but not
// yet run keeps its parked reading (the same stack, its state as it was)
// until it runs. A goroutine read in any other state (runnable, running,
// in a syscall, preempted, copying its stack, ...) is read again at every
// read, whatever its count: it can change without the count moving after
// the read (doc/lineage-abi.md, "changes"). A free g (dead or idle) is remembered like a parked one,
// so that the g structs a program keeps after a burst of goroutines are
// not read again tick after tick; one that starts a new goroutine is read
// again once that goroutine runs, or earlier if its record was rewritten
// after the read. The registry's full blocks are remembered too
// (blockInfo).
//
// When the registry hands out no record between two reads (a server's
// steady state), the second read goes by the plan: the entries in the
// order of their records' addresses, with each count and result side by side,
// so that the read of every count is one sorted vectored read and the
// comparison touches no entry of a goroutine that did not run.
type Cache[T any] struct {
	ent     map[uint64]*cacheEntry[T] // by record (a record belongs to one g for ever)
	gen     uint64                    // reads so far: an entry not seen by the last read goes
	blocks  map[uint64]blockInfo
	readers []*liveReader[T]
	ar      arena // the copies of the known gs, reused from read to read

	// The plan: the last read's records, and an entry for each of them
	// in g address order (complete: every record had one).
	lastAddrs []uint64
	complete  bool
	plan      []*cacheEntry[T]
	planAt    []uint64 // each entry's change count address (in its record)
	planT     []uint32 // each entry's count when read
	planRes   []T      // each entry's result (unset for a free g)
	planFree  []bool
	planStill []bool         // each entry's still
	planShown []bool         // each entry's shown
	planIdx   map[uint64]int // record to plan index, for the re-read ones

	// What the last Read or Changes changed (Changes returns them).
	gone, added []T

	// Scratch, reused from read to read.
	addrs, fresh, known []uint64
	gs                  []*Goroutine
	out                 []T
	ents                []*cacheEntry[T]
	at                  []uint64
}

type cacheEntry[T any] struct {
	g    Goroutine
	res  T
	t    uint32 // its record's change count when it was read
	gen  uint64 // the last read that saw it
	free bool   // the g was free (dead or idle): nothing to return
	// still: the g was read free or parked (waiting), so its reading
	// holds for as long as its count is unchanged. Any other goroutine is
	// read again at every read.
	still bool
	// res is in the set the last read returned (Changes): set when the
	// goroutine is read, cleared when it is found changed or gone.
	shown bool
}

// Read is ReadLive through the cache. The goroutines it returns are the
// cache's: they stay as they are (a changed goroutine gets a new one), and
// a result of visit is returned again, read after read, for as long as its
// goroutine does not change. The slices themselves are reused by the next
// Read.
func (c *Cache[T]) Read(v *View, newVisit func() Visit[T]) ([]*Goroutine, []T, LiveStats, error) {
	return c.read(v, newVisit, true)
}

// Changes is Read for a reader that keeps the set of results itself (a
// wall-clock profile counting every parked goroutine tick after tick): it
// returns only the results that left the set since the previous Read or
// Changes (gone: their goroutine ran, ended, or kept changing while read)
// and those that joined it (added), so that a read of a population that
// stayed parked costs the copy of the change counts and nothing per
// goroutine. The set is the results Read would return; a caller applies
// gone before added. The slices are reused by the next call.
func (c *Cache[T]) Changes(v *View, newVisit func() Visit[T]) (gone, added []T, st LiveStats, err error) {
	_, _, st, err = c.read(v, newVisit, false)
	return c.gone, c.added, st, err
}

// read is Read (all: the goroutines and results returned) or Changes.
func (c *Cache[T]) read(v *View, newVisit func() Visit[T], all bool) ([]*Goroutine, []T, LiveStats, error) {
	var st LiveStats
	clear(c.gone) // keep no result alive
	clear(c.added)
	c.gone, c.added = c.gone[:0], c.added[:0]
	if c.ent == nil {
		c.ent, c.blocks, c.planIdx = map[uint64]*cacheEntry[T]{}, map[uint64]blockInfo{}, map[uint64]int{}
	}
	c.gen++
	addrs, err := v.recordAddrs(&st, c.blocks, c.addrs[:0])
	c.addrs = addrs
	if err != nil {
		return nil, nil, st, err
	}
	c.ar.reset()
	var gs []*Goroutine
	var out []T
	if c.complete && slices.Equal(addrs, c.lastAddrs) {
		gs, out, err = c.readPlanned(v, newVisit, &st, all)
	} else {
		gs, out, err = c.readAll(v, addrs, newVisit, &st)
	}
	c.gs, c.out = gs[:0], out[:0]
	st.Goroutines = len(gs)
	return gs, out, st, err
}

// readPlanned is a Read that finds the same records as the last: it reads
// every count in plan order, and reads again only the goroutines whose
// count changed, each into its place in the plan.
func (c *Cache[T]) readPlanned(v *View, newVisit func() Visit[T], st *LiveStats, all bool) ([]*Goroutine, []T, error) {
	gs, out, fresh := c.gs[:0], c.out[:0], c.fresh[:0]
	clear(c.planIdx)
	planT := c.planT
	for i, b := range readMerged(v.mem, c.planAt, 4, st, &c.ar) {
		if b != nil && le32(b) == planT[i] && c.planStill[i] {
			if !c.planFree[i] && !c.planShown[i] {
				// Unchanged, but left out before (unreadable then).
				c.show(c.plan[i])
				c.planShown[i] = true
			}
			if all && !c.planFree[i] {
				gs, out = append(gs, &c.plan[i].g), append(out, c.planRes[i])
			}
			continue
		}
		e := c.plan[i]
		fresh = append(fresh, e.g.RecordAddr)
		c.planIdx[e.g.RecordAddr] = i
		c.hide(e)
		c.planShown[i] = false
	}
	c.fresh = fresh[:0]
	if len(fresh) == 0 {
		return gs, out, nil
	}
	set := func(rec uint64, e *cacheEntry[T]) {
		i := c.planIdx[rec]
		c.ent[rec] = e
		c.plan[i], c.planT[i], c.planRes[i], c.planFree[i], c.planStill[i] = e, e.t, e.res, e.free, e.still
		c.planShown[i] = !e.free // a goroutine read is shown (below)
	}
	err := readLive(v, fresh, newVisit, st, &c.readers, liveSink[T]{
		keep: func(g *Goroutine, res T, changes uint32) {
			e := &cacheEntry[T]{g: *g, res: res, t: changes, gen: c.gen, still: still(g)}
			set(g.RecordAddr, e)
			c.show(e)
			gs, out = append(gs, &e.g), append(out, res)
		},
		free: func(rec, gp uint64, t uint32) {
			set(rec, &cacheEntry[T]{g: Goroutine{G: gp, RecordAddr: rec}, t: t, gen: c.gen, free: true, still: true})
		},
	})
	// A goroutine that kept changing keeps its old entry: its count
	// differs, so the next read reads it again.
	return gs, out, err
}

// readAll is a Read that finds new records (or the first Read): it looks
// every record up, reads the new ones and the changed ones, forgets the
// records that are gone and makes the plan again.
func (c *Cache[T]) readAll(v *View, addrs []uint64, newVisit func() Visit[T], st *LiveStats) ([]*Goroutine, []T, error) {
	gs, out := c.gs[:0], c.out[:0]
	fresh, known := c.fresh[:0], c.known[:0]
	ents := c.ents[:0]
	for _, a := range addrs {
		if e := c.ent[a]; e != nil {
			known, ents = append(known, a), append(ents, e)
		} else {
			fresh = append(fresh, a)
		}
	}
	// Each known goroutine's change count alone.
	at := c.at[:0]
	for _, e := range ents {
		at = append(at, v.countAddr(&e.g))
	}
	for i, b := range readMerged(v.mem, at, 4, st, &c.ar) {
		e := ents[i]
		if b == nil || le32(b) != e.t || !e.still {
			fresh = append(fresh, known[i])
			c.hide(e)
			continue
		}
		if !e.free && !e.shown {
			c.show(e) // unchanged, but left out before (unreadable then)
		}
		e.gen = c.gen
		if !e.free {
			gs, out = append(gs, &e.g), append(out, e.res)
		}
	}
	c.at = at[:0]
	err := readLive(v, fresh, newVisit, st, &c.readers, liveSink[T]{
		keep: func(g *Goroutine, res T, changes uint32) {
			e := &cacheEntry[T]{g: *g, res: res, t: changes, gen: c.gen, still: still(g)}
			c.ent[g.RecordAddr] = e
			c.show(e)
			gs, out = append(gs, &e.g), append(out, res)
		},
		// A free g stays free until its count changes: a program that
		// once ran many goroutines keeps their g structs, and their
		// records, for ever.
		free: func(rec, gp uint64, t uint32) {
			c.ent[rec] = &cacheEntry[T]{g: Goroutine{G: gp, RecordAddr: rec}, t: t, gen: c.gen, free: true, still: true}
		},
	})
	if cerr := v.canceled(); cerr != nil {
		// Interrupted: no more work (the plan sorts every entry); the
		// next Read, if any, looks every record up again.
		c.complete = false
		return gs, out, cerr
	}
	for a, e := range c.ent {
		if e.gen != c.gen {
			c.hide(e)
			delete(c.ent, a)
		}
	}
	clear(ents[:cap(ents)]) // keep no entry alive
	c.fresh, c.known, c.ents = fresh[:0], known[:0], ents[:0]
	c.makePlan(v, addrs, err == nil)
	return gs, out, err
}

// show puts a goroutine just read in the returned set.
func (c *Cache[T]) show(e *cacheEntry[T]) {
	e.shown = true
	c.added = append(c.added, e.res)
}

// hide takes a changed or gone goroutine out of the returned set.
func (c *Cache[T]) hide(e *cacheEntry[T]) {
	if e.shown {
		e.shown = false
		c.gone = append(c.gone, e.res)
	}
}

// makePlan orders the entries by their record's address for the next Read:
// the counts it reads lie in the registry's blocks, one record apart.
func (c *Cache[T]) makePlan(v *View, addrs []uint64, ok bool) {
	clear(c.plan)
	var zero T
	clear(c.planRes) // keep no result alive
	plan := c.plan[:0]
	for _, e := range c.ent {
		plan = append(plan, e)
	}
	slices.SortFunc(plan, func(a, b *cacheEntry[T]) int { return cmp.Compare(a.g.RecordAddr, b.g.RecordAddr) })
	c.plan = plan
	c.planAt, c.planT, c.planRes, c.planFree, c.planStill, c.planShown = c.planAt[:0], c.planT[:0], c.planRes[:0], c.planFree[:0], c.planStill[:0], c.planShown[:0]
	for _, e := range plan {
		res := e.res
		if e.free {
			res = zero
		}
		c.planAt = append(c.planAt, v.countAddr(&e.g))
		c.planT, c.planRes, c.planFree = append(c.planT, e.t), append(c.planRes, res), append(c.planFree, e.free)
		c.planStill = append(c.planStill, e.still)
		c.planShown = append(c.planShown, e.shown)
	}
	c.lastAddrs = append(c.lastAddrs[:0], addrs...)
	c.complete = ok && len(plan) == len(addrs)
}

// still reports whether a goroutine read consistently stays as read until
// its change count changes: it was parked (waiting), and so cannot change
// its stack without running, which moves the count. (A runnable one is
// read again: the runtime moves the count as it starts to run it, just
// before its status changes.)
func still(g *Goroutine) bool {
	return g.Status == StatusWaiting
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// countAddr is the address of g's change count: in its record, or, from a
// runtime that publishes none (off_rec_changes 0, reserved before), the
// g's transition count, which every status change increments (starting
// to run among them).
func (v *View) countAddr(g *Goroutine) uint64 {
	if v.H.OffRecChanges != 0 {
		return g.RecordAddr + uint64(v.H.OffRecChanges)
	}
	return g.G + uint64(v.Reg.OffGTransitions)
}

// blockInfo is what a reader keeps of a registry block. A block's next
// never changes once it is linked (blocks are linked at the head and never
// unlinked), and a full block gets no more records: a Cache reads again
// only the blocks linked since its last read and those that were not full.
type blockInfo struct {
	next       uint64
	nrec, used uint32
}

// recordAddrs walks the block list (bounded as Goroutines bounds it) and
// appends to addrs the address of every record handed out, one read per
// block. memo, if not nil, keeps the blocks from one call to the next:
// a call after the first reads the new blocks one by one and the blocks
// that were not full in one vectored read.
func (v *View) recordAddrs(st *LiveStats, memo map[uint64]blockInfo, addrs []uint64) ([]uint64, error) {
	r := v.Reg
	if r == nil {
		return nil, ErrNoRegistry
	}
	head, err := target.Word(v.mem, v.Addr+OffBlocks)
	if err != nil {
		return nil, fmt.Errorf("reading the goroutine registry: %w", err)
	}
	nblocks, err := target.Word(v.mem, v.Addr+OffNBlocks)
	if err != nil {
		return nil, fmt.Errorf("reading the goroutine registry: %w", err)
	}
	le := binary.LittleEndian
	check := func(b uint64, info blockInfo) error {
		if info.used > info.nrec || info.nrec > maxBlockRecs {
			return fmt.Errorf("registry block %#x: %d of %d records used (corrupt memory?)", b, info.used, info.nrec)
		}
		return nil
	}
	hdr := make([]byte, r.BlockHeaderSize)
	var order []uint64
	var open []int // indices in order of known blocks that were not full
	var blockInfos []blockInfo
	seen := map[uint64]bool{}
	for b, n := head, uint64(0); b != 0; n++ {
		if n >= nblocks || n >= maxBlocks || seen[b] {
			return addrs, fmt.Errorf("goroutine registry: block list at %#x longer than its count %d (corrupt memory?)", b, nblocks)
		}
		seen[b] = true
		info, known := memo[b]
		if !known {
			st.Calls++
			if err := v.mem.ReadAt(hdr, b); err != nil {
				return addrs, fmt.Errorf("reading registry block %#x: %w", b, err)
			}
			info = blockInfo{le.Uint64(hdr[r.OffBlockNext:]), le.Uint32(hdr[r.OffBlockNrec:]), le.Uint32(hdr[r.OffBlockUsed:])}
			if err := check(b, info); err != nil {
				return addrs, err
			}
		} else if info.used < info.nrec {
			open = append(open, len(order))
		}
		order, blockInfos = append(order, b), append(blockInfos, info)
		b = info.next
	}
	if len(open) > 0 {
		at := make([]uint64, len(open))
		for i, k := range open {
			at[i] = order[k]
		}
		for i, h := range readMerged(v.mem, at, int(r.BlockHeaderSize), st, nil) {
			b, info := at[i], &blockInfos[open[i]]
			if h == nil {
				return addrs, fmt.Errorf("reading registry block %#x: unreadable", b)
			}
			used := le.Uint32(h[r.OffBlockUsed:])
			if used < info.used {
				return addrs, fmt.Errorf("registry block %#x: %d records used, %d before (corrupt memory?)", b, used, info.used)
			}
			info.used = used
			if err := check(b, *info); err != nil {
				return addrs, err
			}
		}
	}
	for i, b := range order {
		info := blockInfos[i]
		if memo != nil {
			memo[b] = info
		}
		for j := uint32(0); j < info.used; j++ {
			addrs = append(addrs, b+uint64(r.BlockHeaderSize)+uint64(j)*uint64(v.H.RecordSize))
		}
	}
	return addrs, nil
}

// liveG is one goroutine of a batch while it is read.
type liveG struct {
	rec  uint64 // record address
	seq  uint64
	gp   uint64
	c1   uint32 // the record's change count, read first
	t1   uint32
	gbuf []byte // g fields, first read
	g    Goroutine
	bad  bool // its wait list could not be read: read it again
}

// Ranges closer than mergeGap are read as one (records of a block, g
// structs of a span): the kernel's cost is mostly per range.
const (
	mergeGap = 4 << 10
	mergeMax = 256 << 10
)

// An arena hands out the buffers of one batch's reads, and takes them all
// back when the next batch starts: a read of many goroutines reuses the
// same memory rather than have the kernel fault in fresh pages, batch
// after batch, while it copies into them. What outlives a batch is parsed
// out of its buffers, or copied (Cache). A nil arena allocates.
type arena struct {
	buf  []byte
	off  int
	outs [][]byte // readMerged's results
	nout int

	// readLiveBatch's goroutines.
	ls   []liveG
	live []*liveG
	vgs  []*Goroutine
	recd []Record // the batch's records, for a transient sink
	gps  []uint64
	recs []uint64

	// readMerged's scratch, reused from call to call.
	idx  []addrIdx
	runs []mergedRun
	bufs [][]byte
	at   []uint64
	errs []error
}

// addrIdx is one of readMerged's ranges: its address and its index.
type addrIdx struct {
	addr uint64
	i    int
}

// mergedRun is one range read for the members idx[first:end].
type mergedRun struct {
	lo, hi     uint64
	first, end int
}

// alloc returns n bytes (not zeroed).
func (a *arena) alloc(n int) []byte {
	if a == nil {
		return make([]byte, n)
	}
	if a.off+n > len(a.buf) {
		// The old chunk stays with what was handed out of it; the new one
		// is reused from the next batch on.
		a.buf, a.off = make([]byte, max(2*len(a.buf), n, arenaChunk)), 0
	}
	b := a.buf[a.off : a.off+n : a.off+n]
	a.off += n
	return b
}

// reserve makes the next n bytes come from one chunk: a read whose ranges
// add up to more than the chunk's room gets a chunk big enough for all of
// them, which the next read reuses, instead of a series of growing ones,
// each faulted in afresh.
func (a *arena) reserve(n int) {
	if a != nil && a.off+n > len(a.buf) {
		a.buf, a.off = make([]byte, max(2*len(a.buf), n, arenaChunk)), 0
	}
}

// results returns n nil slices.
func (a *arena) results(n int) [][]byte {
	if a == nil {
		return make([][]byte, n)
	}
	if a.nout+n > len(a.outs) {
		a.outs, a.nout = make([][]byte, max(2*len(a.outs), n, 4*LiveBatch)), 0
	}
	out := a.outs[a.nout : a.nout+n : a.nout+n]
	a.nout += n
	clear(out)
	return out
}

func (a *arena) reset() { a.off, a.nout = 0, 0 }

// arenaChunk is an arena's first chunk: enough for a whole batch, so that
// the first batch does not fault in a series of growing chunks. Pages that
// are never touched cost nothing.
const arenaChunk = 1 << 20

// readMerged reads size bytes at each of addrs, merging nearby ranges into
// one, all in one vectored read. It returns each range's bytes (nil if
// they could not be read).
func readMerged(m Mem, addrs []uint64, size int, st *LiveStats, ar *arena) [][]byte {
	out := ar.results(len(addrs))
	if len(addrs) == 0 {
		return out
	}
	var idx []addrIdx
	var runs []mergedRun
	var bufs [][]byte
	var at []uint64
	var errs []error
	if ar != nil {
		idx, runs, bufs, at, errs = ar.idx[:0], ar.runs[:0], ar.bufs[:0], ar.at[:0], ar.errs[:0]
	}
	for i, a := range addrs {
		idx = append(idx, addrIdx{a, i})
	}
	if !slices.IsSorted(addrs) { // a Cache's plan is
		// Sorted by the address kept beside each index: no indirect
		// load per comparison (this sort was 6% of a read's CPU).
		slices.SortFunc(idx, func(a, b addrIdx) int { return cmp.Compare(a.addr, b.addr) })
	}
	for k, x := range idx {
		a := x.addr
		if n := len(runs); n > 0 && a <= runs[n-1].hi+mergeGap && a+uint64(size)-runs[n-1].lo <= mergeMax && a >= runs[n-1].lo {
			runs[n-1].hi = max(runs[n-1].hi, a+uint64(size))
			runs[n-1].end = k + 1
			continue
		}
		runs = append(runs, mergedRun{a, a + uint64(size), k, k + 1})
	}
	total := 0
	for _, r := range runs {
		total += int(r.hi - r.lo)
	}
	ar.reserve(total)
	for _, r := range runs {
		bufs, at, errs = append(bufs, ar.alloc(int(r.hi-r.lo))), append(at, r.lo), append(errs, nil)
	}
	st.Calls++
	readV(m, bufs, at, errs)
	for k, r := range runs {
		for _, x := range idx[r.first:r.end] {
			i := x.i
			if errs[k] == nil {
				out[i] = bufs[k][addrs[i]-r.lo:][:size]
				continue
			}
			// A range of the run is unmapped: read its members alone.
			b := make([]byte, size)
			if m.ReadAt(b, addrs[i]) == nil {
				out[i] = b
			}
		}
	}
	if ar != nil {
		ar.idx, ar.runs, ar.bufs, ar.at, ar.errs = idx, runs, bufs, at, errs
	}
	return out
}

// readLiveBatch reads the goroutines of the records at addrs (step 1 to 4
// of ReadLive), calls keep for those read consistently, and returns the
// records to read again.
func readLiveBatch[T any](v *View, addrs []uint64, visit Visit[T], st *LiveStats, ar *arena, sink liveSink[T]) (again []uint64, err error) {
	ar.reset()
	r, h := v.Reg, v.H
	le := binary.LittleEndian
	gsz, rsz := int(r.gSpan), int(h.RecordSize)

	// 1. Each record (for its seq and g), then, separately, each g (for T1).
	recs := readMerged(v.mem, addrs, rsz, st, ar)
	ls := ar.ls[:0]
	for i, a := range addrs {
		b := recs[i]
		if b == nil {
			return nil, fmt.Errorf("reading lineage record %#x: unreadable", a)
		}
		seq := le.Uint64(b[h.OffRecSeq:])
		if seq == 0 {
			continue // handed out, not yet written
		}
		if seq&1 != 0 {
			again = append(again, a) // being written
			continue
		}
		l := liveG{rec: a, seq: seq, gp: le.Uint64(b[h.OffRecG:])}
		if h.OffRecChanges != 0 {
			l.c1 = le.Uint32(b[h.OffRecChanges:])
		}
		ls = append(ls, l)
	}
	ar.ls = ls
	gps, recAddrs := ar.gps[:0], ar.recs[:0]
	for _, l := range ls {
		gps, recAddrs = append(gps, l.gp), append(recAddrs, l.rec)
	}
	defer func() { ar.gps, ar.recs = gps, recAddrs }()
	for i, b := range readMerged(v.mem, gps, gsz, st, ar) {
		if b == nil {
			return nil, fmt.Errorf("reading g %#x: unreadable", gps[i])
		}
		ls[i].t1 = le.Uint32(b[r.OffGTransitions:])
		if h.OffRecChanges == 0 {
			ls[i].c1 = ls[i].t1 // no change count in the record (countAddr)
		}
	}

	// 2. The g fields and the records, then the wait lists.
	gbufs := readMerged(v.mem, gps, gsz, st, ar)
	recs = readMerged(v.mem, recAddrs, rsz, st, ar)
	live := ar.live[:0]
	defer func() { ar.live = live }()
	for i := range ls {
		l := &ls[i]
		if gbufs[i] == nil || recs[i] == nil {
			return nil, fmt.Errorf("reading g %#x and its record %#x: unreadable", l.gp, l.rec)
		}
		l.gbuf = gbufs[i]
		g := &l.g
		if err := v.parseGInto(g, l.gp, l.gbuf); err != nil {
			return nil, err
		}
		if g.Status == StatusDead || g.Status == StatusIdle {
			// A free g; if it was reused meanwhile, the next read finds it.
			if sink.free != nil {
				sink.free(l.rec, l.gp, l.c1)
			}
			continue
		}
		rb := recs[i]
		if le.Uint64(rb[h.OffRecSeq:]) != l.seq {
			again = append(again, l.rec)
			continue
		}
		var rec *Record
		if sink.transient {
			if i >= len(ar.recd) {
				ar.recd = append(ar.recd, make([]Record, i+1-len(ar.recd))...)
			}
			rec = &ar.recd[i]
			err = ParseRecordInto(rec, h, rb)
		} else {
			rec, err = ParseRecord(h, rb)
		}
		if err != nil {
			// A record rewritten under us parses as garbage: the re-read
			// of seq decides.
			again = append(again, l.rec)
			continue
		}
		g.Record, g.RecordAddr = rec, l.rec
		live = append(live, l)
	}
	v.readWaitLists(live, st, ar)
	for _, l := range live {
		if err := v.readLabels(&l.g); err != nil {
			l.bad = true // changed while read: the goroutine is read again
		}
	}

	// 3. What the caller reads of each goroutine (its stack).
	vgs := ar.vgs[:0]
	for _, l := range live {
		vgs = append(vgs, &l.g)
	}
	ar.vgs = vgs
	var res []T
	if visit != nil && len(vgs) > 0 {
		res = visit(vgs)
	}

	// 4. The g fields (with T2) and seq again.
	gps, recAddrs = gps[:0], recAddrs[:0]
	for _, l := range live {
		gps, recAddrs = append(gps, l.gp), append(recAddrs, l.rec)
	}
	gbufs = readMerged(v.mem, gps, gsz, st, ar)
	recs = readMerged(v.mem, recAddrs, rsz, st, ar)
	for i, l := range live {
		g2, rb := gbufs[i], recs[i]
		if l.bad || g2 == nil || rb == nil || le.Uint64(rb[h.OffRecSeq:]) != l.seq ||
			(h.OffRecChanges != 0 && le.Uint32(rb[h.OffRecChanges:]) != l.c1) ||
			le.Uint32(g2[r.OffGTransitions:]) != l.t1 || !r.sameG(l.gbuf, g2) || l.g.Scanning {
			again = append(again, l.rec)
			continue
		}
		var r T
		if res != nil {
			r = res[i]
		}
		sink.keep(&l.g, r, l.c1)
	}
	return again, nil
}

// sameG reports whether two copies of a g agree on every published field
// but the wait start (which the GC sets on a parked goroutine).
func (r *Registry) sameG(a, b []byte) bool {
	le := binary.LittleEndian
	w := func(off uint32) bool { return le.Uint64(a[off:]) == le.Uint64(b[off:]) }
	return le.Uint32(a[r.OffGStatus:]) == le.Uint32(b[r.OffGStatus:]) &&
		le.Uint32(a[r.OffGTransitions:]) == le.Uint32(b[r.OffGTransitions:]) &&
		a[r.OffGWaitReason] == b[r.OffGWaitReason] &&
		w(r.OffGGoid) && w(r.OffGSchedSP) && w(r.OffGSchedPC) && w(r.OffGSchedBP) &&
		w(r.OffGSyscallSP) && w(r.OffGSyscallPC) && w(r.OffGSyscallBP) &&
		w(r.OffGStackLo) && w(r.OffGStackHi) && w(r.OffGWaiting) && (r.LabelSize == 0 || w(r.OffGLabels))
}

// readWaitLists reads what the goroutines that wait wait on, one
// vectored read per position in a select's list (sudogWait). A sudog that
// cannot be read, or a select longer than one can be, changed while it was
// read (the goroutine woke): its goroutine is marked to be read again.
func (v *View) readWaitLists(ls []*liveG, st *LiveStats, ar *arena) {
	r := v.Reg
	le := binary.LittleEndian
	type walk struct {
		l *liveG
		s uint64
	}
	var ws []walk
	for _, l := range ls {
		if l.g.Status == StatusWaiting {
			if s := le.Uint64(l.gbuf[r.OffGWaiting:]); s != 0 {
				ws = append(ws, walk{l, s})
			}
		}
	}
	// Room for each goroutine's first channel, one allocation for the
	// batch rather than one per goroutine (the goroutines keep them).
	slab := make([]uint64, len(ws))
	for i, w := range ws {
		w.l.g.WaitChans = slab[i : i : i+1]
	}
	at := make([]uint64, 0, len(ws))
	for depth := 0; len(ws) > 0; depth++ {
		at = at[:0]
		for _, w := range ws {
			at = append(at, w.s)
		}
		st.Sudogs += len(at)
		bufs := readMerged(v.mem, at, int(r.sudogSpan), st, ar)
		next := ws[:0]
		for i, w := range ws {
			if bufs[i] == nil || depth >= maxWaitChains {
				w.l.bad = true
				continue
			}
			if s := r.sudogWait(&w.l.g, bufs[i]); s != 0 {
				next = append(next, walk{w.l, s})
			}
		}
		ws = next
	}
}
