package lineageabi

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// Reading the registry of a process that keeps running (doc/lineage-abi.md,
// section 13, reader procedure): nothing is stopped, so every goroutine is
// read under the consistency rule, and the reads are batched so that a
// read of many goroutines costs a few system calls per batch, not several
// per goroutine.

// VecMem is a Mem that reads several ranges in one call (process_vm_readv
// with one iovec per range). The ranges are read in order, but no order
// is promised between the bytes of one range; a reader that needs an
// order puts the reads in separate calls.
type VecMem interface {
	Mem
	// ReadV reads bufs[i] at addrs[i] for every i and sets errs[i] (nil if
	// bufs[i] was filled).
	ReadV(bufs [][]byte, addrs []uint64, errs []error)
}

// readV reads the ranges with m.ReadV, or one by one.
func readV(m Mem, bufs [][]byte, addrs []uint64, errs []error) {
	if vm, ok := m.(VecMem); ok {
		vm.ReadV(bufs, addrs, errs)
		return
	}
	for i := range bufs {
		errs[i] = m.ReadAt(bufs[i], addrs[i])
	}
}

// LiveBatch is how many goroutines ReadLive reads together: each phase of a
// batch is one vectored read of at most 2*LiveBatch ranges (the kernel
// takes 1024).
const LiveBatch = 512

// LiveRetries bounds the reads of one goroutine that keeps changing.
const LiveRetries = 4

// LiveStats counts what a read of a running process met.
type LiveStats struct {
	Goroutines int // read consistently
	Retried    int // re-reads of goroutines that changed while read
	Torn       int // goroutines that kept changing: left out
	Calls      int // vectored reads
}

// Visit is called by ReadLive for each batch of goroutines, between the
// reads of their g fields and records and the re-reads that validate them:
// it reads what else it needs of each goroutine (its stack) from the
// running process. Its result for gs[i] is kept if gs[i] turns out
// unchanged, and dropped (and gs[i] read again) if not.
type Visit[T any] func(gs []*Goroutine) []T

// ReadLive reads every goroutine of the registry from a process that keeps
// running, and calls visit for each batch. Each goroutine is read by the
// ABI's rule, extended to what visit reads:
//
//  1. the record's seq (with the block) and g, then, in a separate read,
//     the g's transition counter (T1);
//  2. the g's fields and the record, then the sudogs it waits on;
//  3. visit (its stack);
//  4. the g's fields again, with the transition counter (T2), and the
//     record's seq.
//
// The goroutine is kept if T1 == T2, seq is unchanged and even, and the
// g's published fields (status, scan bit, saved registers, stack bounds,
// wait list) are the same in 2 and 4: a goroutine cannot run without a
// status change, and the GC moves a parked goroutine's stack (shrinking
// it) only under its scan bit and with new bounds. Otherwise it is read
// again, up to LiveRetries times, and then counted as torn.
//
// The result is not a snapshot (section 13, reader procedure, step 5):
// each goroutine is consistent on its own, at its own instant.
func ReadLive[T any](v *View, visit Visit[T]) ([]Goroutine, []T, LiveStats, error) {
	var st LiveStats
	addrs, err := v.recordAddrs(&st)
	if err != nil {
		return nil, nil, st, err
	}
	gs := make([]Goroutine, 0, len(addrs))
	out := make([]T, 0, len(addrs))
	err = readLive(v, addrs, visit, &st, func(g *Goroutine, res T, _ []byte) {
		gs, out = append(gs, *g), append(out, res)
	})
	st.Goroutines = len(gs)
	return gs, out, st, err
}

// readLive reads the goroutines of the records at addrs, with retries, and
// calls keep for each one read consistently, with visit's result and the
// copy of its g's fields.
func readLive[T any](v *View, addrs []uint64, visit Visit[T], st *LiveStats, keep func(*Goroutine, T, []byte)) error {
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
		batch := LiveBatch
		if try > 0 {
			batch = max(1, LiveBatch>>(4*try))
		}
		var again []uint64
		for len(addrs) > 0 {
			n := min(len(addrs), batch)
			changed, err := readLiveBatch(v, addrs[:n], visit, st, keep)
			if err != nil {
				return err
			}
			again = append(again, changed...)
			addrs = addrs[n:]
		}
		addrs = again
	}
	return nil
}

// A Cache keeps, from one read of a process to the next (a profile's
// ticks), each goroutine's last consistent reading and visit's result,
// by g. A goroutine whose g shows the same transition count and published
// fields as when it was read has not run since (it cannot run without a
// status change): its reading is reused, for the cost of a copy of its g.
type Cache[T any] struct {
	recG map[uint64]uint64 // record -> g (a record belongs to one g for ever)
	ent  map[uint64]*cacheEntry[T]
}

type cacheEntry[T any] struct {
	g    Goroutine
	res  T
	gbuf []byte
}

// Read is ReadLive through the cache.
func (c *Cache[T]) Read(v *View, visit Visit[T]) ([]Goroutine, []T, LiveStats, error) {
	var st LiveStats
	if c.recG == nil {
		c.recG, c.ent = map[uint64]uint64{}, map[uint64]*cacheEntry[T]{}
	}
	addrs, err := v.recordAddrs(&st)
	if err != nil {
		return nil, nil, st, err
	}
	gs := make([]Goroutine, 0, len(addrs))
	out := make([]T, 0, len(addrs))
	var fresh, known, gps []uint64
	for _, a := range addrs {
		if gp, ok := c.recG[a]; ok && c.ent[gp] != nil {
			known, gps = append(known, a), append(gps, gp)
		} else {
			fresh = append(fresh, a)
		}
	}
	next := map[uint64]*cacheEntry[T]{}
	for i, b := range readMerged(v.mem, gps, int(v.Reg.gSpan), &st) {
		e := c.ent[gps[i]]
		if b == nil || !v.Reg.sameG(b, e.gbuf) || le32(b[v.Reg.OffGStatus:])&v.Reg.StatusScan != 0 {
			fresh = append(fresh, known[i])
			continue
		}
		next[gps[i]] = e
		gs, out = append(gs, e.g), append(out, e.res)
	}
	err = readLive(v, fresh, visit, &st, func(g *Goroutine, res T, gbuf []byte) {
		c.recG[g.RecordAddr] = g.G
		next[g.G] = &cacheEntry[T]{g: *g, res: res, gbuf: slices.Clone(gbuf)}
		gs, out = append(gs, *g), append(out, res)
	})
	c.ent = next
	st.Goroutines = len(gs)
	return gs, out, st, err
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// recordAddrs walks the block list (bounded as Goroutines bounds it) and
// returns the address of every record handed out, one read per block.
func (v *View) recordAddrs(st *LiveStats) ([]uint64, error) {
	r := v.Reg
	if r == nil {
		return nil, ErrNoRegistry
	}
	head, err := word(v.mem, v.Addr+OffRegistry)
	if err != nil {
		return nil, fmt.Errorf("reading the goroutine registry: %v", err)
	}
	nblocks, err := word(v.mem, v.Addr+OffRegistry+8)
	if err != nil {
		return nil, fmt.Errorf("reading the goroutine registry: %v", err)
	}
	le := binary.LittleEndian
	hdr := make([]byte, r.BlockHeaderSize)
	seen := map[uint64]bool{}
	var addrs []uint64
	for b, n := head, uint64(0); b != 0; n++ {
		if n >= nblocks || n >= maxBlocks || seen[b] {
			return addrs, fmt.Errorf("goroutine registry: block list at %#x longer than its count %d (corrupt memory?)", b, nblocks)
		}
		seen[b] = true
		st.Calls++
		if err := v.mem.ReadAt(hdr, b); err != nil {
			return addrs, fmt.Errorf("reading registry block %#x: %v", b, err)
		}
		nrec, used := le.Uint32(hdr[r.OffBlockNrec:]), le.Uint32(hdr[r.OffBlockUsed:])
		if used > nrec || nrec > maxBlockRecs {
			return addrs, fmt.Errorf("registry block %#x: %d of %d records used (corrupt memory?)", b, used, nrec)
		}
		for i := uint32(0); i < used; i++ {
			addrs = append(addrs, b+uint64(r.BlockHeaderSize)+uint64(i)*uint64(v.H.RecordSize))
		}
		b = le.Uint64(hdr[r.OffBlockNext:])
	}
	return addrs, nil
}

// liveG is one goroutine of a batch while it is read.
type liveG struct {
	rec  uint64 // record address
	seq  uint64
	gp   uint64
	t1   uint32
	gbuf []byte // g fields, first read
	g    *Goroutine
	bad  bool // its wait list could not be read: read it again
}

// Ranges closer than mergeGap are read as one (records of a block, g
// structs of a span): the kernel's cost is mostly per range.
const (
	mergeGap = 4 << 10
	mergeMax = 256 << 10
)

// readMerged reads size bytes at each of addrs, merging nearby ranges into
// one, all in one vectored read. It returns each range's bytes (nil if
// they could not be read).
func readMerged(m Mem, addrs []uint64, size int, st *LiveStats) [][]byte {
	out := make([][]byte, len(addrs))
	if len(addrs) == 0 {
		return out
	}
	idx := make([]int, len(addrs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(addrs[a], addrs[b]) })
	type run struct {
		lo, hi  uint64
		members []int
	}
	var runs []run
	for _, i := range idx {
		a := addrs[i]
		if n := len(runs); n > 0 && a <= runs[n-1].hi+mergeGap && a+uint64(size)-runs[n-1].lo <= mergeMax && a >= runs[n-1].lo {
			runs[n-1].hi = max(runs[n-1].hi, a+uint64(size))
			runs[n-1].members = append(runs[n-1].members, i)
			continue
		}
		runs = append(runs, run{a, a + uint64(size), []int{i}})
	}
	bufs := make([][]byte, len(runs))
	at := make([]uint64, len(runs))
	errs := make([]error, len(runs))
	for k, r := range runs {
		bufs[k], at[k] = make([]byte, r.hi-r.lo), r.lo
	}
	st.Calls++
	readV(m, bufs, at, errs)
	for k, r := range runs {
		for _, i := range r.members {
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
	return out
}

// readLiveBatch reads the goroutines of the records at addrs (step 1 to 4
// of ReadLive), calls keep for those read consistently, and returns the
// records to read again.
func readLiveBatch[T any](v *View, addrs []uint64, visit Visit[T], st *LiveStats, keep func(*Goroutine, T, []byte)) (again []uint64, err error) {
	r, h := v.Reg, v.H
	le := binary.LittleEndian
	gsz, rsz := int(r.gSpan), int(h.RecordSize)

	// 1. Each record (for its seq and g), then, separately, each g (for T1).
	recs := readMerged(v.mem, addrs, rsz, st)
	var ls []*liveG
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
		ls = append(ls, &liveG{rec: a, seq: seq, gp: le.Uint64(b[r.OffRecG:])})
	}
	gps := make([]uint64, len(ls))
	recAddrs := make([]uint64, len(ls))
	for i, l := range ls {
		gps[i], recAddrs[i] = l.gp, l.rec
	}
	for i, b := range readMerged(v.mem, gps, gsz, st) {
		if b == nil {
			return nil, fmt.Errorf("reading g %#x: unreadable", gps[i])
		}
		ls[i].t1 = le.Uint32(b[r.OffGTransitions:])
	}

	// 2. The g fields and the records, then the wait lists.
	gbufs := readMerged(v.mem, gps, gsz, st)
	recs = readMerged(v.mem, recAddrs, rsz, st)
	var live []*liveG
	for i, l := range ls {
		if gbufs[i] == nil || recs[i] == nil {
			return nil, fmt.Errorf("reading g %#x and its record %#x: unreadable", l.gp, l.rec)
		}
		l.gbuf = gbufs[i]
		g, err := v.parseG(l.gp, l.gbuf)
		if err != nil {
			return nil, err
		}
		if g.Status == StatusDead || g.Status == StatusIdle {
			continue // a free g; if it was reused meanwhile, the next read finds it
		}
		rb := recs[i]
		if le.Uint64(rb[h.OffRecSeq:]) != l.seq {
			again = append(again, l.rec)
			continue
		}
		rec, err := ParseRecord(h, rb)
		if err != nil {
			// A record rewritten under us parses as garbage: the re-read
			// of seq decides.
			again = append(again, l.rec)
			continue
		}
		g.Record, g.RecordAddr = rec, l.rec
		l.g = g
		live = append(live, l)
	}
	v.readWaitLists(live, st)

	// 3. What the caller reads of each goroutine (its stack).
	vgs := make([]*Goroutine, len(live))
	for i, l := range live {
		vgs[i] = l.g
	}
	var res []T
	if visit != nil && len(vgs) > 0 {
		res = visit(vgs)
	}

	// 4. The g fields (with T2) and seq again.
	gps, recAddrs = gps[:0], recAddrs[:0]
	for _, l := range live {
		gps, recAddrs = append(gps, l.gp), append(recAddrs, l.rec)
	}
	gbufs = readMerged(v.mem, gps, gsz, st)
	recs = readMerged(v.mem, recAddrs, rsz, st)
	for i, l := range live {
		g2, rb := gbufs[i], recs[i]
		if l.bad || g2 == nil || rb == nil || le.Uint64(rb[h.OffRecSeq:]) != l.seq ||
			le.Uint32(g2[r.OffGTransitions:]) != l.t1 || !r.sameG(l.gbuf, g2) || l.g.Scanning {
			again = append(again, l.rec)
			continue
		}
		var r T
		if res != nil {
			r = res[i]
		}
		keep(l.g, r, l.gbuf)
	}
	return again, nil
}

// sameG reports whether two copies of a g agree on every published field
// but the wait start (which the GC sets on a parked goroutine).
func (r *Registry) sameG(a, b []byte) bool {
	for _, f := range []struct{ off, size uint32 }{
		{r.OffGGoid, 8}, {r.OffGStatus, 4}, {r.OffGTransitions, 4}, {r.OffGWaitReason, 1},
		{r.OffGSchedSP, 8}, {r.OffGSchedPC, 8}, {r.OffGSchedBP, 8},
		{r.OffGSyscallSP, 8}, {r.OffGSyscallPC, 8}, {r.OffGSyscallBP, 8},
		{r.OffGStackLo, 8}, {r.OffGStackHi, 8}, {r.OffGWaiting, 8},
	} {
		if string(a[f.off:f.off+f.size]) != string(b[f.off:f.off+f.size]) {
			return false
		}
	}
	return true
}

// readWaitLists follows the sudog lists of the goroutines that wait, one
// vectored read per list position. A list that cannot be read, or is
// longer than a wait list can be, changed while it was read (the
// goroutine woke): its goroutine is marked to be read again.
func (v *View) readWaitLists(ls []*liveG, st *LiveStats) {
	r := v.Reg
	le := binary.LittleEndian
	span := int(max(r.OffSudogWaitlink, r.OffSudogElem, r.OffSudogC, r.OffSudogIsSelect) + 8)
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
	for depth := 0; len(ws) > 0; depth++ {
		at := make([]uint64, len(ws))
		for i, w := range ws {
			at[i] = w.s
		}
		bufs := readMerged(v.mem, at, span, st)
		next := ws[:0]
		for i, w := range ws {
			if bufs[i] == nil || depth >= maxWaitChains {
				w.l.bad = true
				continue
			}
			b, g := bufs[i], w.l.g
			if c := le.Uint64(b[r.OffSudogC:]); c != 0 {
				g.WaitChans = append(g.WaitChans, c)
				g.Select = g.Select || b[r.OffSudogIsSelect] != 0
			} else {
				g.WaitAddr = le.Uint64(b[r.OffSudogElem:])
			}
			if s := le.Uint64(b[r.OffSudogWaitlink:]); s != 0 {
				next = append(next, walk{w.l, s})
			}
		}
		ws = next
	}
}
