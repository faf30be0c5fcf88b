package ebpf

import (
	"errors"
	"fmt"
	"slices"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// What user space makes of a sample: its stack, with the innermost frame
// repaired, and its goroutine's lineage.

// Walk returns the sample's stack, PC first: the kernel's frame-pointer
// walk, with the innermost frame repaired from the words above SP
// (stack.RepairKernelWalk). bin is the process's executable, loaded at
// bias.
func (e *Event) Walk(bin *gobin.Binary, bias uint64) []uint64 {
	pcs := e.Stack
	if len(pcs) == 0 {
		pcs = []uint64{e.PC}
	}
	return stack.RepairKernelWalk(bin, bias, target.Regs{PC: e.PC, SP: e.SP, FP: e.FP, TLS: e.FSBase}, e.Words[:], pcs)
}

// ErrOtherThread is Lineage's error for a region that names another thread
// than the sampled one.
var ErrOtherThread = errors.New("the region belongs to another thread")

// Lineage checks and decodes the lineage record the event copied, with the
// offsets of the process's header h: the region's tid must be the sampled
// thread's (the region rule) as the process's PID namespace numbers it,
// tid (e.TID unless the process has a namespace of its own:
// target.NSTIDs), and the record's seq even and the same
// before the copy, in it and after it. A thread that runs no goroutine
// (or is not a Go thread) has none: 0, nil and no error. A copy that is
// not whole is an error wrapping lineageabi.ErrTorn or ErrOtherThread, or
// says what is wrong with the record.
func (e *Event) Lineage(h *lineageabi.Header, tid int) (goid uint64, chain []lineageabi.Step, err error) {
	if e.Flags&FlagLineage == 0 || e.Cur == 0 {
		return 0, nil, nil // no goroutine on this thread (or not a Go thread)
	}
	if e.Flags&FlagRegionOK == 0 || e.Flags&FlagRecord == 0 || e.Seq1 != e.Seq2 || e.Seq1&1 != 0 {
		return 0, nil, lineageabi.ErrTorn
	}
	if e.RegionTID != uint64(tid) {
		return 0, nil, fmt.Errorf("sample of thread %d: %w (%d)", tid, ErrOtherThread, e.RegionTID)
	}
	// The program copies up to a page boundary, then the rest; bytes it
	// could not read are in a page the process never touched, zero, unless
	// the record says it uses them.
	b := e.Record
	if len(b) < int(h.RecordSize) {
		b = append(slices.Clone(b), make([]byte, int(h.RecordSize)-len(b))...)
	}
	rec, err := lineageabi.ParseRecord(h, b)
	if err != nil {
		return 0, nil, err
	}
	if n := recordExtent(h, rec); n > len(e.Record) {
		return 0, nil, fmt.Errorf("lineage record: %d of its %d bytes in use were read", len(e.Record), n)
	}
	if rec.Seq != e.Seq1 {
		return 0, nil, lineageabi.ErrTorn
	}
	return rec.Goid, lineageabi.Chain(rec), nil
}

// recordExtent is how many leading bytes of rec hold fields it uses: the
// fixed fields, its nanc ancestors and its nstk stack entries.
func recordExtent(h *lineageabi.Header, rec *lineageabi.Record) int {
	n := uint64(0)
	for _, off := range []uint32{h.OffRecSeq, h.OffRecG, h.OffRecGoid, h.OffRecParentGoid} {
		n = max(n, uint64(off)+8)
	}
	for _, off := range []uint32{h.OffRecNanc, h.OffRecNstk, h.OffRecFlags} {
		n = max(n, uint64(off)+2)
	}
	n = max(n, uint64(h.OffRecDepth)+4, uint64(h.OffRecSite)+uint64(h.AncSize))
	if rec.Nanc > 0 {
		n = max(n, uint64(h.OffRecAnc)+uint64(rec.Nanc)*uint64(h.AncSize))
	}
	if rec.Nstk > 0 {
		n = max(n, uint64(h.OffRecStack)+8*uint64(rec.Nstk))
	}
	return int(n)
}
