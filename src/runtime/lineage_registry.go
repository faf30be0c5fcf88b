// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// The lineage registry: every goroutine's record, for readers outside the
// process.
//
// Regions (lineage.go) show what each thread runs; parked goroutines, where a
// server spends its life, are not reachable from them. The registry makes
// every record reachable:
//
//   - Records are handed out from blocks of lineageBlockRecords records in
//     persistent memory. A block is linked once, at the head of the list
//     lineageABI.blocks, and never freed or unlinked; a block's used
//     count only grows. Records [0, used) of a block each belong to one g
//     struct for the life of the process (g structs are never freed), and
//     the record names it (record.g).
//   - The header publishes the offsets of the g and sudog fields a reader
//     needs for a goroutine that is not running: goid, status, the status
//     transition counter, wait reason and wait start, the saved sched and
//     syscall pc/sp/bp, the stack bounds and the sudog list it waits on.
//     It also maps the runtime's status values to the ABI's stable status
//     codes, and points at the runtime's wait reason strings. Readers never
//     hard-code any of it.
//
// A g struct takes its record from its M's block at its first go statement
// (lineageNewg: a few loads and stores, no lock); once per
// lineageBlockRecords records the block is full and lineageNewgSlow links a
// new one. Blocks cost the same memory as the single records they replace.
// The g fields are the runtime's own: the status transition counter is the
// one the goroutine profile already keeps (gFPProfCache.transitions,
// incremented by every status change), so a reader can tell when a
// goroutine changed while it was read, and retry. Each start of running
// (and each new goroutine in a reused g struct) also increments the
// record's change count (lineageRecord.changes): a reader that reads again
// and again (a wall-clock profiler's ticks) copies those, one record apart
// in the blocks, to find the parked goroutines that ran since, rather than
// a u32 from every g struct.
//
// A walk of the registry is not a snapshot: goroutines start, park, run and
// exit while it proceeds. Each record is consistent on its own (its seq,
// its change count and its g's transition counter are unchanged across
// the read); a reader that
// wants one view of several goroutines stops the process, or reads a core.
// See doc/lineage-abi.md, section "Registry".

package runtime

import (
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

const (
	lineageRegistry = 1 << 4 // header flag: the registry is published

	lineageBlockRecords = 64 // records per block
)

// ABI status codes: stable across releases, unlike the runtime's _G values.
const (
	lineageStatusIdle = iota
	lineageStatusRunnable
	lineageStatusRunning
	lineageStatusSyscall
	lineageStatusWaiting
	lineageStatusDead
	lineageStatusCopystack
	lineageStatusPreempted
	lineageStatusLeaked
	lineageStatusUnknown = 0xff
)

// lineageBlock heads a block of records. The records follow it, each
// lineageABI.recordSize bytes.
type lineageBlock struct {
	_    sys.NotInHeap
	next uint64 // *lineageBlock, written once before the block is linked
	nrec uint32
	used uint32 // records handed out; only grows (atomic)
	_    [48]byte
}

// lineageNoBlock is the block of an M that has none yet: full (no
// records), so that taking a record checks one condition. It is never
// linked into the registry.
var lineageNoBlock lineageBlock

// lineageRegistryInit fills in the run-time part of the registry header.
// Called from lineageinit.
func lineageRegistryInit(h *lineageHeader) {
	h.waitReasons = uint64(uintptr(unsafe.Pointer(&waitReasonStrings)))
}

// lineageAllocRecord hands out a record for gp from the block of mp's
// region, and links a new block into the registry when that one is full
// (or mp has none yet: lineageNoBlock).
// Only mp's thread hands records out of its block, so it takes no lock but
// lineageNewBlock's. A go statement that gets a fresh g struct takes its
// record in lineageNewg, the same way, and comes here only when the block
// is full; an extra M's goroutine comes here for each of its records.
func lineageAllocRecord(mp *m, gp *g) *lineageRecord {
	reg := mp.lineage
	b := (*lineageBlock)(unsafe.Pointer(uintptr(reg.blk)))
	if b.used == b.nrec {
		b = lineageNewBlock()
		reg.blk = uint64(uintptr(unsafe.Pointer(b)))
	}
	r := (*lineageRecord)(add(unsafe.Pointer(b), unsafe.Sizeof(lineageBlock{})+uintptr(b.used)*lineageRecSize))
	r.g = uint64(uintptr(unsafe.Pointer(gp)))
	lineageStoreUsed(&b.used, b.used+1)
	return r
}

// lineageStoreUsed publishes a record handed out of a block: it stores the
// block's new used count after the record's g. The record's seq is still 0
// (never written), which readers skip until its first write, or, from
// lineageNewg, already 1 (being written), which they retry. Only the
// block's M writes used and an aligned 32-bit store is single-copy atomic on
// every port, so a plain store does once the stores before it are ordered:
// on amd64 by TSO (and the compiler, which keeps stores in program order),
// elsewhere by publicationBarrier, a store barrier. It is inlined into
// lineageNewg, a leaf without a frame on amd64 and arm64.
//
//go:nosplit
func lineageStoreUsed(used *uint32, v uint32) {
	if GOARCH != "amd64" {
		publicationBarrier()
	}
	*used = v
}

// lineageNewBlock allocates a block and links it at the head of the
// registry.
func lineageNewBlock() *lineageBlock {
	size := unsafe.Sizeof(lineageBlock{}) + lineageBlockRecords*lineageRecSize
	b := (*lineageBlock)(lineageLowAlloc(size, 64))
	b.nrec = lineageBlockRecords
	lock(&lineageLock)
	b.next = lineageABI.blocks
	// nblocks first: a reader that reads blocks and then nblocks never
	// finds more blocks on the list than nblocks says.
	atomic.Xadd64(&lineageABI.nblocks, 1)
	atomic.Store64(&lineageABI.blocks, uint64(uintptr(unsafe.Pointer(b))))
	unlock(&lineageLock)
	return b
}
