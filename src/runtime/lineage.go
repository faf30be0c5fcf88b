// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Goroutine lineage for external readers.
//
// Profilers, debuggers and core-file readers outside the process want to know,
// for a thread, which goroutine it runs and who created that goroutine, its
// creator, and so on, without DWARF, symbols or per-release struct offsets.
// The runtime publishes this through three kinds of objects, laid out as
// specified in doc/lineage-abi.md (the ABI; keep the two in sync):
//
//   - lineageABI, a statically initialized header with a magic cookie,
//     version, sizes and an offset table (the pattern of CPython's
//     _Py_DebugOffsets). It lives in the data segment, so it is in the
//     executable file even when stripped, and readers find it by its cookie.
//   - one lineageRegion per M, in persistent (never freed) memory, linked once
//     into a registry list headed by lineageABI.regions. The M's own thread
//     stores the current goroutine's record address in region.cur when the
//     goroutine starts running (execute) and clears it when it stops (dropg).
//   - one lineageRecord per g struct, in persistent memory, written at the
//     go statement under a sequence counter: goid, parent goid, its site
//     (start and creation PCs, as offsets from the text start) and its
//     ancestors' sites copied inline, so readers never follow a pointer from one
//     record to another and a chain survives its ancestors' exit and the reuse
//     of their g structs. g structs are never freed, so records are bounded by
//     the peak number of goroutines, not by how many were ever created.
//
// The writer never waits. Readers of a running process check the sequence
// counters and retry; readers that stop the thread see a consistent view by
// construction because region.cur is cleared (dropg) before a dead g, and so
// its record, can be reused.

package runtime

import (
	"internal/abi"
	"internal/goarch"
	"internal/runtime/atomic"
	"internal/runtime/pprof/label"
	"internal/runtime/sys"
	"unsafe"
)

const (
	lineageVersion  = 2
	lineageMaxLimit = 64 // upper bound of GODEBUG lineage and lineagestack
	lineageSkip     = 8  // frames between the stack walk's start and the go statement

	// header flags
	lineageReady   = 1 << 0
	lineageRecords = 1 << 1
	lineageStacks  = 1 << 2
	lineageTLSG    = 1 << 3

	// region states
	lineageFree  = 0
	lineageGo    = 1
	lineageExtra = 2

	// lineageMode values
	lineageModeOff     = 0
	lineageModeRecords = 1
	lineageModeStacks  = 2

	// record flags
	lineageAncTruncated   = 1 << 0
	lineageStackTruncated = 1 << 1
	lineageParentUnknown  = 1 << 2
	lineageCgoCallback    = 1 << 3
)

// lineageHeader is the ABI header. Every field is fixed-width so the layout is
// the same on every port; offsets are asserted by the tests. Every field is
// statically initialized (lineageABI), so the executable file holds it as
// memory does, but those marked "run time": lineageinit and the registry
// fill them in (doc/lineage-abi.md marks them *[rt]*).
type lineageHeader struct {
	magic      [16]byte
	version    uint32
	headerSize uint32
	ptrSize    uint32
	flags      uint32 // run time
	self       uint64 // run time
	regions    uint64 // run time
	nregions   uint64 // run time
	maxDepth   uint32 // run time
	maxStack   uint32 // run time
	recordSize uint32 // run time
	regionSize uint32

	offRegionSeq, offRegionTid, offRegionCur, offRegionNext, offRegionMid, offRegionState uint32

	offRecSeq, offRecG, offRecGoid, offRecParentGoid        uint32
	offRecNanc, offRecNstk, offRecFlags, offRecDepth        uint32
	offRecSite, offRecAnc, ancSize, offAncStart, offAncGopc uint32
	offRecStack                                             uint32 // run time
	offGM, offMRegion, offGRecord                           uint32
	offRecChanges                                           uint32
	tlsGOffset                                              int64  // run time
	textBase                                                uint64 // run time: site offsets are relative to it

	// The registry (lineage_registry.go).
	blocks  uint64 // run time: *lineageBlock, head of the block list
	nblocks uint64 // run time: blocks ever linked
	// run time: address of the wait reason strings, each a (ptr, len) pair
	waitReasons  uint64
	nWaitReasons uint32
	stringSize   uint32 // size of one (ptr, len) pair

	blockHeaderSize, offBlockNext, offBlockNrec, offBlockUsed uint32

	offGGoid, offGStatus, offGTransitions, offGWaitReason, offGWaitSince uint32
	offGSchedSP, offGSchedPC, offGSchedBP                                uint32
	offGSyscallSP, offGSyscallPC, offGSyscallBP                          uint32
	offGStackLo, offGStackHi, offGWaiting                                uint32
	offSudogWaitlink, offSudogElem, offSudogC, offSudogIsSelect          uint32

	statusScan uint32    // bit set in the status while the g is being scanned
	statusMap  [16]uint8 // ABI status code of each runtime status value

	// Labels: g.labels points at a label.Set (runtime/pprof's labelMap
	// embeds it first), a slice of {key, value string}.
	offGLabels, offLabelsList, labelSize, offLabelKey, offLabelValue uint32

	_ [32]byte
}

// lineageRegion is one M's published state. Only the M's own thread writes it
// after it is linked into the registry.
type lineageRegion struct {
	_     sys.NotInHeap
	seq   uint64
	tid   uint64
	cur   uint64 // *lineageRecord of the running goroutine, or 0
	next  uint64 // *lineageRegion, registry link, written once
	mid   uint64
	state uint32
	_     uint32
	free  *lineageRegion // runtime-private free list link
	_     [8 - goarch.PtrSize]byte
	blk   uint64 // runtime-private: *lineageBlock this M hands records out from, or lineageNoBlock
}

// lineageAnc is one goroutine's site: its start PC and the PC of the go
// statement that created it, as offsets from lineageABI.textBase (0 when
// unknown or out of reach, lineageTextOff). It is a record's own site and
// each entry of its ancestor array.
type lineageAnc struct {
	start uint32
	gopc  uint32
}

// lineageRecord is the fixed part of a record; the ancestor array (maxDepth
// entries) and the creation stack (maxStack PCs) follow it.
//
// site comes last, shaped like a lineageAnc and just before the ancestor
// array: a child's ancestors are then one contiguous copy of its parent's
// site and first ancestors. (Readers go by the offset table; the order is
// not part of the ABI.)
type lineageRecord struct {
	_          sys.NotInHeap
	seq        uint64
	g          uint64 // *g owning the record, for ever (lineage_registry.go)
	goid       uint64
	parentGoid uint64
	lineageCounts
	// changes is incremented each time the goroutine starts running
	// (execute, lineageRunning), each time its g struct starts a new
	// goroutine (lineageNewg) and when an extra M's goroutine enters a
	// callback (lineageActivate), and is never reset: records are 128
	// bytes apart and belong to one g for ever, so a reader that wants to
	// know which goroutines ran since its last read copies these counts,
	// not every g struct. It is not bumped by the other status changes
	// (six per channel round trip): a goroutine read while parked keeps
	// its stack until it runs, and one read in any other state is read
	// again (doc/lineage-abi.md, "changes").
	changes uint32
	nstk    uint16
	_       uint16
	// child is what lineageCounts are for every child of this goroutine,
	// worked out at its first go statement (child.nanc is 0 before): most
	// goroutines create none, and one that creates many copies it per
	// child in one move. Private to the runtime: not in the offset table.
	child lineageCounts
	site  lineageAnc
}

// lineageCounts is what a record inherits from its creator: one 8-byte
// move. nstk, which a child does not inherit, is kept apart.
type lineageCounts struct {
	nanc  uint16
	flags uint16
	depth uint32
}

var lineageABI = lineageHeader{
	magic:      [16]byte{0x7f, 'G', 'o', 'L', 'i', 'n', 'e', 'a', 'g', 'e', 0, 0, 0xa5, 0x5a, 0xc3, 0x3c},
	version:    lineageVersion,
	headerSize: uint32(unsafe.Sizeof(lineageHeader{})),
	ptrSize:    goarch.PtrSize,
	regionSize: uint32(unsafe.Sizeof(lineageRegion{})),

	offRegionSeq:   uint32(unsafe.Offsetof(lineageRegion{}.seq)),
	offRegionTid:   uint32(unsafe.Offsetof(lineageRegion{}.tid)),
	offRegionCur:   uint32(unsafe.Offsetof(lineageRegion{}.cur)),
	offRegionNext:  uint32(unsafe.Offsetof(lineageRegion{}.next)),
	offRegionMid:   uint32(unsafe.Offsetof(lineageRegion{}.mid)),
	offRegionState: uint32(unsafe.Offsetof(lineageRegion{}.state)),

	offRecSeq:        uint32(unsafe.Offsetof(lineageRecord{}.seq)),
	offRecG:          uint32(unsafe.Offsetof(lineageRecord{}.g)),
	offRecGoid:       uint32(unsafe.Offsetof(lineageRecord{}.goid)),
	offRecParentGoid: uint32(unsafe.Offsetof(lineageRecord{}.parentGoid)),
	offRecNanc:       uint32(unsafe.Offsetof(lineageRecord{}.nanc)),
	offRecNstk:       uint32(unsafe.Offsetof(lineageRecord{}.nstk)),
	offRecFlags:      uint32(unsafe.Offsetof(lineageRecord{}.flags)),
	offRecDepth:      uint32(unsafe.Offsetof(lineageRecord{}.depth)),
	offRecChanges:    uint32(unsafe.Offsetof(lineageRecord{}.changes)),
	offRecSite:       uint32(unsafe.Offsetof(lineageRecord{}.site)),
	offRecAnc:        uint32(unsafe.Sizeof(lineageRecord{})),
	ancSize:          uint32(unsafe.Sizeof(lineageAnc{})),
	offAncStart:      uint32(unsafe.Offsetof(lineageAnc{}.start)),
	offAncGopc:       uint32(unsafe.Offsetof(lineageAnc{}.gopc)),

	offGM:      uint32(unsafe.Offsetof(g{}.m)),
	offMRegion: uint32(unsafe.Offsetof(m{}.lineage)),
	offGRecord: uint32(unsafe.Offsetof(g{}.lineage)),

	nWaitReasons: uint32(len(waitReasonStrings)),
	stringSize:   2 * goarch.PtrSize,

	blockHeaderSize: uint32(unsafe.Sizeof(lineageBlock{})),
	offBlockNext:    uint32(unsafe.Offsetof(lineageBlock{}.next)),
	offBlockNrec:    uint32(unsafe.Offsetof(lineageBlock{}.nrec)),
	offBlockUsed:    uint32(unsafe.Offsetof(lineageBlock{}.used)),

	offGGoid:        uint32(unsafe.Offsetof(g{}.goid)),
	offGStatus:      uint32(unsafe.Offsetof(g{}.atomicstatus)),
	offGTransitions: uint32(unsafe.Offsetof(g{}.fpprof) + unsafe.Offsetof(g{}.fpprof.transitions)),
	offGWaitReason:  uint32(unsafe.Offsetof(g{}.waitreason)),
	offGWaitSince:   uint32(unsafe.Offsetof(g{}.waitsince)),
	offGSchedSP:     uint32(unsafe.Offsetof(g{}.sched) + unsafe.Offsetof(g{}.sched.sp)),
	offGSchedPC:     uint32(unsafe.Offsetof(g{}.sched) + unsafe.Offsetof(g{}.sched.pc)),
	offGSchedBP:     uint32(unsafe.Offsetof(g{}.sched) + unsafe.Offsetof(g{}.sched.bp)),
	offGSyscallSP:   uint32(unsafe.Offsetof(g{}.syscallsp)),
	offGSyscallPC:   uint32(unsafe.Offsetof(g{}.syscallpc)),
	offGSyscallBP:   uint32(unsafe.Offsetof(g{}.syscallbp)),
	offGStackLo:     uint32(unsafe.Offsetof(g{}.stack) + unsafe.Offsetof(g{}.stack.lo)),
	offGStackHi:     uint32(unsafe.Offsetof(g{}.stack) + unsafe.Offsetof(g{}.stack.hi)),
	offGWaiting:     uint32(unsafe.Offsetof(g{}.waiting)),
	// The sudog's pointers are maybeTraceablePtrs; vu holds the address
	// whether or not the pointer is traced.
	offSudogWaitlink: uint32(unsafe.Offsetof(sudog{}.waitlink)),
	offSudogElem:     uint32(unsafe.Offsetof(sudog{}.elem) + unsafe.Offsetof(sudog{}.elem.vu)),
	offSudogC:        uint32(unsafe.Offsetof(sudog{}.c) + unsafe.Offsetof(sudog{}.c.vu)),
	offSudogIsSelect: uint32(unsafe.Offsetof(sudog{}.isSelect)),

	statusScan: _Gscan,
	// Every index is listed: one left out would read as status code 0
	// (idle). A runtime status added after _Gdeadextra needs its code.
	statusMap: [16]uint8{
		_Gidle:            lineageStatusIdle,
		_Grunnable:        lineageStatusRunnable,
		_Grunning:         lineageStatusRunning,
		_Gsyscall:         lineageStatusSyscall,
		_Gwaiting:         lineageStatusWaiting,
		_Gmoribund_unused: lineageStatusUnknown,
		_Gdead:            lineageStatusDead,
		_Genqueue_unused:  lineageStatusUnknown,
		_Gcopystack:       lineageStatusCopystack,
		_Gpreempted:       lineageStatusPreempted,
		_Gleaked:          lineageStatusLeaked,
		_Gdeadextra:       lineageStatusDead,
		_Gdeadextra + 1:   lineageStatusUnknown,
		_Gdeadextra + 2:   lineageStatusUnknown,
		_Gdeadextra + 3:   lineageStatusUnknown,
		_Gdeadextra + 4:   lineageStatusUnknown,
	},

	offGLabels:    uint32(unsafe.Offsetof(g{}.labels)),
	offLabelsList: uint32(unsafe.Offsetof(label.Set{}.List)),
	labelSize:     uint32(unsafe.Sizeof(label.Label{})),
	offLabelKey:   uint32(unsafe.Offsetof(label.Label{}.Key)),
	offLabelValue: uint32(unsafe.Offsetof(label.Label{}.Value)),
}

var (
	lineageLock     mutex
	lineageFreeList *lineageRegion
	lineageMode     uint32 // lineageModeOff, Records or Stacks, fixed at startup
	lineageNoStacks bool   // lineageMode != lineageModeStacks
	lineageCopy8    bool   // lineageDepth == 8: lineageNewg copies 8 ancestors unrolled
	lineageDepth    uint32 // copy of GODEBUG lineage, fixed at startup
	lineageStack    uint32 // copy of GODEBUG lineagestack, fixed at startup
	lineageRecSize  uintptr
	// lineageMainStart is the site start of the main goroutine, which
	// ends an ancestry (lineageAncestry).
	lineageMainStart uint32
)

// lineageinit fills in the run-time part of the header. Called from schedinit
// after parsedebugvars, before any user goroutine exists.
func lineageinit() {
	// parsegodebug has clamped both to [0, lineageMaxLimit] (debugclamp.go).
	d, s := debug.lineage, debug.lineagestack
	if d == 0 {
		s = 0
	}
	lineageDepth, lineageStack = uint32(d), uint32(s)
	h := &lineageABI
	h.maxDepth = lineageDepth
	h.maxStack = lineageStack
	h.offRecStack = h.offRecAnc + h.ancSize*lineageDepth
	h.recordSize = h.offRecStack + 8*lineageStack
	lineageRecSize = uintptr(h.recordSize)
	h.self = uint64(uintptr(unsafe.Pointer(h)))
	h.textBase = uint64(firstmoduledata.text)
	lineageMainStart = lineageTextOff(abi.FuncPCABIInternal(main))
	flags := uint32(lineageReady)
	if d > 0 {
		flags |= lineageRecords
		lineageMode = lineageModeRecords
	}
	if s > 0 {
		flags |= lineageStacks
		lineageMode = lineageModeStacks
	}
	lineageNoStacks = lineageMode != lineageModeStacks
	lineageCopy8 = lineageDepth == 8
	if d > 0 {
		lineageRegistryInit(h)
		flags |= lineageRegistry
	}
	if off, ok := lineageTLSGOffset(); ok {
		h.tlsGOffset = int64(off)
		flags |= lineageTLSG
	}
	atomic.Store(&h.flags, flags)
}

// lineageTLSGOffset finds where the thread's g lives relative to the thread
// pointer. The offset is fixed by the linker (-8 on linux/amd64 with internal
// linking, the TLS IE offset chosen by the external linker with cgo), so it is
// found by looking for the current g near the thread pointer.
func lineageTLSGOffset() (int, bool) {
	if GOOS != "linux" || (GOARCH != "amd64" && GOARCH != "arm64") {
		return 0, false
	}
	if GOARCH == "arm64" && !iscgo {
		return 0, false // g lives only in R28
	}
	tp := lineageThreadPointer()
	if tp == 0 {
		return 0, false
	}
	me := uintptr(unsafe.Pointer(getg()))
	for i := 1; i <= 16; i++ {
		off := i * 8
		if GOARCH == "amd64" {
			off = -off // TLS variant II: blocks below the thread pointer
		}
		if *(*uintptr)(unsafe.Pointer(tp + uintptr(off))) == me {
			return off, true
		}
	}
	return 0, false
}

// lineageCheckTLS re-checks the published TLS offset on a new thread.
func lineageCheckTLS() {
	h := &lineageABI
	if atomic.Load(&h.flags)&lineageTLSG == 0 {
		return
	}
	tp := lineageThreadPointer()
	if tp == 0 || *(*uintptr)(unsafe.Pointer(tp + uintptr(h.tlsGOffset))) != uintptr(unsafe.Pointer(getg())) {
		atomic.And(&h.flags, ^uint32(lineageTLSG))
	}
}

// lineageNewRegion gives mp a region, reusing one of an exited M if any.
// Called from mcommoninit.
func lineageNewRegion(mp *m) {
	lock(&lineageLock)
	r := lineageFreeList
	if r != nil {
		lineageFreeList = r.free
		r.free = nil
		unlock(&lineageLock)
		mp.lineage = r
		return
	}
	unlock(&lineageLock)
	// Allocate outside lineageLock, which is a leaf: lineageLowAlloc
	// takes a lock of its own, as lineageNewBlock does.
	r = (*lineageRegion)(lineageLowAlloc(unsafe.Sizeof(lineageRegion{}), 64))
	r.blk = uint64(uintptr(unsafe.Pointer(&lineageNoBlock)))
	lock(&lineageLock)
	r.next = lineageABI.regions
	// nregions first, as for blocks (lineageNewBlock): a reader that
	// reads the head and then the count never finds more regions on the
	// list than the count says.
	atomic.Xadd64(&lineageABI.nregions, 1)
	atomic.Store64(&lineageABI.regions, uint64(uintptr(unsafe.Pointer(r))))
	unlock(&lineageLock)
	mp.lineage = r
}

// lineageActivate publishes that mp's region belongs to the calling thread.
// Called on the M's own thread after minit (mstart1, needm).
//
//go:nosplit
func lineageActivate(mp *m, state uint32) {
	r := mp.lineage
	s := r.seq
	// Rare, so a full atomic: lineageSeqBegin's plain store on amd64 relies
	// on a load following it, which these region writes lack.
	atomic.Xadd64(&r.seq, 1)
	r.tid = mp.procid
	r.mid = uint64(mp.id)
	r.state = state
	var cur uint64
	if gp := mp.curg; gp != nil {
		// An extra M's goroutine leaving _Gdeadextra for a callback
		// (needm): readers found it free.
		cur = uint64(uintptr(unsafe.Pointer(gp.lineage)))
		lineageRunning(gp)
	}
	r.cur = cur
	lineageStoreSeq(&r.seq, s+2)
}

// lineageStart activates the region of a Go-created M (mstart1).
func lineageStart(mp *m) {
	lineageActivate(mp, lineageGo)
	lineageCheckTLS()
}

// lineageRetire marks mp's region free; called on the M's thread before it
// exits (mexit) or gives its extra M back (dropm).
//
//go:nosplit
func lineageRetire(mp *m) {
	r := mp.lineage
	s := r.seq
	// Rare, so a full atomic: lineageSeqBegin's plain store on amd64 relies
	// on a load following it, which these region writes lack.
	atomic.Xadd64(&r.seq, 1)
	r.cur = 0
	r.tid = 0
	r.state = lineageFree
	lineageStoreSeq(&r.seq, s+2)
}

// lineageExit retires mp's region and makes it available to a future M.
func lineageExit(mp *m) {
	lineageRetire(mp)
	lock(&lineageLock)
	mp.lineage.free = lineageFreeList
	lineageFreeList = mp.lineage
	unlock(&lineageLock)
	mp.lineage = nil
}

// ancs returns r's ancestor array; only the first lineageDepth entries exist.
func (r *lineageRecord) ancs() *[lineageMaxLimit]lineageAnc {
	return (*[lineageMaxLimit]lineageAnc)(add(unsafe.Pointer(r), unsafe.Sizeof(lineageRecord{})))
}

// lineageTextOff returns pc as a site offset: pc - lineageABI.textBase, or
// 0 (unknown) for no PC or a PC outside [textBase, textBase+4GiB), code of
// a plugin or of a shared library.
//
//go:nosplit
func lineageTextOff(pc uintptr) uint32 {
	d := uint64(pc) - lineageABI.textBase
	if d>>32 != 0 {
		return 0
	}
	return uint32(d)
}

// lineageTextPC is the PC of site offset off, or 0 if it is unknown.
//
//go:nosplit
func lineageTextPC(off uint32) uintptr {
	if off == 0 {
		return 0
	}
	return uintptr(lineageABI.textBase + uint64(off))
}

func (r *lineageRecord) stack() *[lineageMaxLimit]uint64 {
	return (*[lineageMaxLimit]uint64)(add(unsafe.Pointer(r), uintptr(lineageABI.offRecStack)))
}

// lineageRunning tells lineage readers that gp has just entered _Grunning
// from _Gwaiting: called after the status change by every path that does
// so (coroswitch, and the runtime's own short waits that go back to
// _Grunning without the scheduler, such as a GC assist or stopping the
// world). execute does the same from _Grunnable, written out and before
// its status change: readers keep a reading only of a goroutine they
// found waiting (or free), so the count may move while the goroutine is
// still runnable, but not after it left _Gwaiting and before it runs. A
// goroutine that leaves _Gsyscall for _Grunning (exitsyscall) was not
// parked: readers read a goroutine found in a syscall again each time.
//
//go:nosplit
func lineageRunning(gp *g) {
	if r := gp.lineage; r != nil {
		r.changes++
	}
}

// lineageExtraG gives an extra M's callback goroutine its record.
func lineageExtraG(gp *g) {
	if lineageDepth == 0 {
		return
	}
	r := lineageAllocRecord(gp.m, gp)
	r.goid = gp.goid
	r.site = lineageAnc{lineageTextOff(gp.startpc), lineageTextOff(gp.gopc)}
	r.flags = lineageCgoCallback
	atomic.Store64(&r.seq, 2)
	gp.lineage = r
}

// lineageNewg writes newg's record: called by newproc1 on the system stack
// after newg has its goid and before it can run, followed by lineageNewgSlow
// if it returns false. It is on the path of every go statement, so it is a
// leaf without a frame that handles the common case (lineage on without
// creation stacks, a creator with a record, a g struct with a record or
// room in the M's block for one) with no call and no locked instruction on
// amd64 (see lineageSeqBegin). The ancestors are one contiguous block, the
// parent's own site and its first ancestors' sites, copied two 8-byte
// entries (one 16-byte move) at a time.
//
// With lineage off no goroutine has a record, so the mode is checked only
// where the creator has none.
//
//go:nosplit
func lineageNewg(newg, callergp *g, callerpc uintptr) bool {
	p := callergp.lineage
	if p == nil {
		return lineageMode == lineageModeOff
	}
	if p.child.nanc == 0 {
		// Every child has its creator as anc[0], so worked-out
		// counts never have nanc 0.
		depth := p.depth + 1
		if depth == 0 {
			depth-- // saturate
		}
		// Field by field: a lineageCounts value would need a frame.
		nanc := uint16(min(uint32(p.nanc)+1, lineageDepth))
		flags := p.flags & lineageParentUnknown
		if depth > uint32(nanc) {
			flags |= lineageAncTruncated
		}
		p.child.depth = depth
		p.child.flags = flags
		p.child.nanc = nanc
	}
	r := newg.lineage
	if r != nil {
		// On amd64 the sequence's two stores are written out, each
		// one add to memory (lineageSeqBegin's plain store, without
		// an instruction for its inline mark).
		if GOARCH == "amd64" {
			r.seq++
		} else {
			lineageSeqBegin(&r.seq, r.seq)
		}
		// A new goroutine in a g struct a reader may have read free.
		r.changes++
		// Clear nstk and the record's own child counts (its g struct
		// may have served a goroutine of another depth). Where a
		// misaligned store is allowed, one store: nstk, the padding,
		// child.nanc and child.flags are adjacent.
		if GOARCH == "amd64" || GOARCH == "arm64" {
			*(*uint64)(unsafe.Pointer(&r.nstk)) = 0
		} else {
			r.nstk = 0
			r.child.nanc = 0
		}
	} else {
		// A g struct that never ran a goroutine (a burst of go
		// statements started before any of them runs): take the next
		// record of the M's block, as lineageAllocRecord does, and
		// hand it out already odd (a reader retries it as any record
		// being written). Its nstk and own child counts are zero, as
		// the block was allocated. lineageNewgSlow links a new block
		// when this one is full (or the M has none yet:
		// lineageNoBlock).
		b := (*lineageBlock)(unsafe.Pointer(uintptr(getg().m.lineage.blk)))
		used := b.used
		if used == b.nrec {
			return false
		}
		r = (*lineageRecord)(unsafe.Add(unsafe.Pointer(b), uintptr(used)*lineageRecSize+unsafe.Sizeof(lineageBlock{})))
		r.g = uint64(uintptr(unsafe.Pointer(newg)))
		r.seq = 1
		lineageStoreUsed(&b.used, used+1)
		newg.lineage = r
	}
	r.goid = newg.goid
	r.parentGoid = callergp.goid
	r.lineageCounts = p.child
	// The site: lineageTextOff of both PCs, stored and then checked at
	// once (a PC out of reach is rare).
	base := lineageABI.textBase
	start, gopc := uint64(newg.startpc)-base, uint64(callerpc)-base
	r.site.start = uint32(start)
	r.site.gopc = uint32(gopc)
	if (start|gopc)>>32 != 0 {
		// Out of reach (lineageTextOff): unknown, 0. (From gopc
		// rather than callerpc, which would be kept in a register.)
		if gopc>>32 != 0 {
			gopc = 0
		}
		r.site = lineageAnc{lineageTextOff(newg.startpc), uint32(gopc)}
	}
	// unsafe.Add rather than add, whose inline marks would cost an
	// instruction each.
	d := unsafe.Add(unsafe.Pointer(r), unsafe.Sizeof(lineageRecord{}))
	src := unsafe.Pointer(&p.site)
	if lineageCopy8 {
		// The default depth: eight entries in four 16-byte moves, with
		// no loop, whatever nanc is. Entries from nanc on are the
		// parent's stale ones, which readers do not read (they are
		// within both records: depth 8).
		*(*[2]uint64)(d) = *(*[2]uint64)(src)
		*(*[2]uint64)(unsafe.Add(d, 16)) = *(*[2]uint64)(unsafe.Add(src, 16))
		*(*[2]uint64)(unsafe.Add(d, 32)) = *(*[2]uint64)(unsafe.Add(src, 32))
		*(*[2]uint64)(unsafe.Add(d, 48)) = *(*[2]uint64)(unsafe.Add(src, 48))
	} else {
		// Other depths: one 16-byte move per two entries (an array
		// copy would move 8 bytes at a time or call memmove), an
		// 8-byte one for an odd entry.
		nanc := r.nanc
		const pair = 2 * unsafe.Sizeof(lineageAnc{})
		end := unsafe.Add(d, uintptr(nanc/2)*pair)
		for d != end {
			*(*[2]uint64)(d) = *(*[2]uint64)(src)
			d = unsafe.Add(d, pair)
			src = unsafe.Add(src, pair)
		}
		if nanc&1 != 0 {
			*(*uint64)(d) = *(*uint64)(src)
		}
	}
	if GOARCH == "amd64" {
		r.seq++
	} else {
		lineageSeqEnd(&r.seq, r.seq+1)
	}
	return lineageNoStacks
}

// lineageNewgSlow finishes what lineageNewg left undone: the first record of
// a g struct when the M's block is full, the record of a goroutine whose
// creator has none, and the creation stack.
//
//go:noinline
func lineageNewgSlow(newg, callergp *g, callerpc uintptr) {
	r, p := newg.lineage, callergp.lineage
	if r == nil {
		r = lineageAllocRecord(getg().m, newg)
		newg.lineage = r
		if p != nil {
			lineageNewg(newg, callergp, callerpc)
		}
	}
	pgoid := callergp.goid
	if p == nil {
		// A creator without a record (a system goroutine's g0, an
		// extra M's goroutine before lineageExtraG): if it is a
		// goroutine, its own entry is all that is known.
		s := r.seq
		lineageSeqBegin(&r.seq, s)
		r.goid = newg.goid
		r.site = lineageAnc{lineageTextOff(newg.startpc), lineageTextOff(callerpc)}
		r.parentGoid = pgoid
		var c lineageCounts
		if pgoid != 0 {
			r.ancs()[0] = lineageAnc{lineageTextOff(callergp.startpc), lineageTextOff(callergp.gopc)}
			c = lineageCounts{nanc: 1, flags: lineageParentUnknown, depth: 1}
		}
		r.lineageCounts = c
		r.nstk = 0
		r.child.nanc = 0
		r.changes++ // a new goroutine, as in lineageNewg
		lineageSeqEnd(&r.seq, s+2)
	}
	// A creator with goid 0 runs on a system stack whose outermost frame
	// pointer the OS set, possibly to garbage: record no stack for it.
	if lineageStack == 0 || pgoid == 0 {
		return
	}
	// The stack goes in as a second update of the complete record.
	s := r.seq
	lineageSeqBegin(&r.seq, s)
	r.nstk, r.flags = lineageNewgStack(r, callergp, callerpc, r.flags)
	lineageSeqEnd(&r.seq, s+2)
}

// lineageNewgStack records the creation stack in r: the frames from the go
// statement at callerpc outwards, by frame pointers from here, or by
// gentraceback of callergp if the frame-pointer walk does not reach the go
// statement. It returns the stack's length and flags with
// lineageStackTruncated added when the stack was cut.
//
//go:noinline
func lineageNewgStack(r *lineageRecord, callergp *g, callerpc uintptr, flags uint16) (uint16, uint16) {
	var buf [lineageMaxLimit + lineageSkip]uintptr
	var n int
	if !tracefpunwindoff() && !getg().m.fpUnwindNeedsCgoTraceback() && !fpUnwindPanicking(callergp) {
		n = fpTracebackPCs(unsafe.Pointer(getfp()), buf[:lineageStack+lineageSkip])
	}
	i := lineageFind(buf[:n], callerpc)
	if i < 0 {
		n = gcallers(callergp, 0, buf[:lineageStack+lineageSkip])
		i = lineageFind(buf[:n], callerpc)
	}
	if i < 0 {
		return 0, flags | lineageStackTruncated
	}
	pcs := buf[i:n]
	if len(pcs) > int(lineageStack) {
		flags |= lineageStackTruncated
		pcs = pcs[:lineageStack]
	}
	st := r.stack()
	for j, pc := range pcs {
		st[j] = uint64(pc)
	}
	return uint16(len(pcs)), flags
}

func lineageFind(pcs []uintptr, pc uintptr) int {
	for i, p := range pcs {
		if i >= lineageSkip {
			break
		}
		if p == pc {
			return i
		}
	}
	return -1
}
