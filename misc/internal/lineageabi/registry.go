package lineageabi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"fpsafe.dev/misc/internal/target"
)

// The registry (doc/lineage-abi.md, section "Registry"): every goroutine's
// record, reachable from the header, with the offsets of the g and sudog
// fields that describe a goroutine that is not running.

const (
	FlagRegistry = 1 << 4

	maxBlocks     = 1 << 20 // bound on a block walk beyond nblocks
	maxBlockRecs  = 1 << 16
	maxGOffset    = 1 << 12 // g and sudog fields lie within this many bytes
	maxWaitChains = 1 << 10 // bound on a select's sudog list
	maxLabels     = 1 << 10 // bound on a goroutine's pprof labels
	maxLabelBytes = 1 << 12 // bound on one label's key or value
)

// ABI status codes (stable across releases).
const (
	StatusIdle = iota
	StatusRunnable
	StatusRunning
	StatusSyscall
	StatusWaiting
	StatusDead
	StatusCopystack
	StatusPreempted
	StatusLeaked
	StatusUnknown = 0xff
)

var statusNames = [...]string{"idle", "runnable", "running", "syscall", "waiting", "dead", "copystack", "preempted", "leaked"}

// StatusName is the name of an ABI status code; "?" for StatusUnknown, a
// runtime status the map does not know (see Plausible).
func StatusName(code uint8) string {
	if int(code) < len(statusNames) {
		return statusNames[code]
	}
	return "?"
}

// Registry is the registry part of the header.
type Registry struct {
	Blocks, NBlocks                                           uint64
	BlockHeaderSize, OffBlockNext, OffBlockNrec, OffBlockUsed uint32

	OffGGoid, OffGStatus, OffGTransitions, OffGWaitReason, OffGWaitSince uint32
	OffGSchedSP, OffGSchedPC, OffGSchedBP                                uint32
	OffGSyscallSP, OffGSyscallPC, OffGSyscallBP                          uint32
	OffGStackLo, OffGStackHi, OffGWaiting                                uint32
	OffSudogWaitlink, OffSudogElem, OffSudogC, OffSudogIsSelect          uint32

	StatusScan   uint32
	StatusMap    [16]uint8
	WaitReasons  uint64
	NWaitReasons uint32
	StringSize   uint32

	// Where a goroutine's pprof labels are: g.labels points at a label
	// set, whose label slice is at OffLabelsList; each label (LabelSize
	// bytes) has its key and value strings at OffLabelKey, OffLabelValue.
	OffGLabels, OffLabelsList, LabelSize, OffLabelKey, OffLabelValue uint32

	gSpan     uint32 // bytes of a g a reader copies: the last published field's end
	sudogSpan uint32 // bytes of a sudog a reader copies
}

// parseRegistry decodes the registry fields of a header buffer, or returns
// nil if the header has none.
func parseRegistry(h *Header, b []byte) (*Registry, error) {
	if h.Flags&FlagRegistry == 0 || len(b) < HeaderSize {
		return nil, nil
	}
	le := binary.LittleEndian
	u := func(off int) uint32 { return le.Uint32(b[off:]) }
	// t is the i-th u32 of the run from n_wait_reasons, in the order of
	// regTableNames; l the i-th of the label fields.
	t := func(i int) uint32 { return u(OffRegTable + 4*i) }
	l := func(i int) uint32 { return u(OffGLabels + 4*i) }
	r := &Registry{
		Blocks: le.Uint64(b[OffBlocks:]), NBlocks: le.Uint64(b[OffNBlocks:]), WaitReasons: le.Uint64(b[OffWaitReason:]),
		NWaitReasons: t(0), StringSize: t(1),
		BlockHeaderSize: t(2), OffBlockNext: t(3), OffBlockNrec: t(4), OffBlockUsed: t(5),
		OffGGoid: t(6), OffGStatus: t(7), OffGTransitions: t(8), OffGWaitReason: t(9), OffGWaitSince: t(10),
		OffGSchedSP: t(11), OffGSchedPC: t(12), OffGSchedBP: t(13),
		OffGSyscallSP: t(14), OffGSyscallPC: t(15), OffGSyscallBP: t(16),
		OffGStackLo: t(17), OffGStackHi: t(18), OffGWaiting: t(19),
		OffSudogWaitlink: t(20), OffSudogElem: t(21), OffSudogC: t(22), OffSudogIsSelect: t(23),
		StatusScan: t(24),
		OffGLabels: l(0), OffLabelsList: l(1), LabelSize: l(2), OffLabelKey: l(3), OffLabelValue: l(4),
	}
	copy(r.StatusMap[:], b[OffStatusMap:])
	if r.BlockHeaderSize < 16 || r.BlockHeaderSize > 4096 {
		return nil, fmt.Errorf("lineage registry: block header size %d", r.BlockHeaderSize)
	}
	for _, f := range []struct{ off, size uint32 }{{r.OffBlockNext, 8}, {r.OffBlockNrec, 4}, {r.OffBlockUsed, 4}} {
		if uint64(f.off)+uint64(f.size) > uint64(r.BlockHeaderSize) {
			return nil, fmt.Errorf("lineage registry: block field at %d outside the %d-byte block header", f.off, r.BlockHeaderSize)
		}
	}
	for _, off := range []uint32{r.OffGLabels, r.OffLabelsList, r.OffLabelKey, r.OffLabelValue, r.LabelSize, r.OffGGoid, r.OffGStatus, r.OffGTransitions, r.OffGWaitReason, r.OffGWaitSince,
		r.OffGSchedSP, r.OffGSchedPC, r.OffGSchedBP, r.OffGSyscallSP, r.OffGSyscallPC, r.OffGSyscallBP,
		r.OffGStackLo, r.OffGStackHi, r.OffGWaiting, r.OffSudogWaitlink, r.OffSudogElem, r.OffSudogC, r.OffSudogIsSelect} {
		if off > maxGOffset {
			return nil, fmt.Errorf("lineage registry: g or sudog field offset %d is implausible", off)
		}
	}
	for _, off := range []uint32{r.OffGGoid, r.OffGStatus, r.OffGTransitions, r.OffGWaitReason, r.OffGWaitSince,
		r.OffGSchedSP, r.OffGSchedPC, r.OffGSchedBP, r.OffGSyscallSP, r.OffGSyscallPC, r.OffGSyscallBP,
		r.OffGStackLo, r.OffGStackHi, r.OffGWaiting, r.OffGLabels} {
		r.gSpan = max(r.gSpan, off+8)
	}
	if r.LabelSize != 0 && (uint64(r.OffLabelKey)+uint64(r.StringSize) > uint64(r.LabelSize) ||
		uint64(r.OffLabelValue)+uint64(r.StringSize) > uint64(r.LabelSize)) {
		return nil, fmt.Errorf("lineage registry: label field outside the %d-byte label", r.LabelSize)
	}
	r.sudogSpan = max(r.OffSudogWaitlink, r.OffSudogElem, r.OffSudogC, r.OffSudogIsSelect) + 8
	if r.StringSize != 2*h.PtrSize || r.StringSize < 16 {
		return nil, fmt.Errorf("lineage registry: string size %d", r.StringSize)
	}
	return r, nil
}

// Goroutine is one goroutine as the registry shows it.
type Goroutine struct {
	Record     *Record // its lineage record
	RecordAddr uint64
	G          uint64 // address of the g
	Goid       uint64
	Status     uint8 // ABI status code
	Scanning   bool  // the GC held the goroutine's scan bit
	WaitReason string
	WaitSince  int64 // nanotime when it blocked; 0 if unknown

	SchedPC, SchedSP, SchedBP       uint64
	SyscallPC, SyscallSP, SyscallBP uint64
	StackLo, StackHi                uint64

	// What it waits on: the channels of a channel operation or select
	// (WaitChans, with Select set for a select), or the address of a
	// semaphore or notify list (WaitAddr): sync.Mutex, sync.RWMutex,
	// sync.WaitGroup, sync.Cond.
	WaitChans []uint64
	Select    bool
	WaitAddr  uint64

	// Its pprof labels (runtime/pprof.Do, SetGoroutineLabels), in the
	// label set's order; read only if View.ReadLabels is set.
	Labels []Label
	labels uint64 // g.labels
}

// A Label is one pprof label of a goroutine.
type Label struct{ Key, Value string }

// ErrNoRegistry is returned by Goroutines for a target without a registry.
var ErrNoRegistry = errors.New("the target publishes no goroutine registry (built by an older fork toolchain, or GODEBUG=lineage=0)")

// Goroutines walks the registry and returns every goroutine that has a
// record and is not dead. Records that keep changing while read are
// skipped and counted in torn. The walk is not a snapshot unless the target
// is stopped (or a core). In damaged memory (a core cut short or corrupt)
// a goroutine whose record, g or sudogs cannot be read is skipped, as is
// the rest of a block whose header makes no sense, or of the list where a
// block cannot be read; v.Damage counts them. err is only for a registry
// that cannot be read at all.
func (v *View) Goroutines() (gs []Goroutine, torn int, err error) {
	r := v.Reg
	if r == nil {
		return nil, 0, ErrNoRegistry
	}
	// blocks first, then nblocks (the ABI's order): the list never holds
	// more blocks than the count read after its head.
	head, err := target.Word(v.mem, v.Addr+OffBlocks)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the goroutine registry: %w", err)
	}
	nblocks, err := target.Word(v.mem, v.Addr+OffNBlocks)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the goroutine registry: %w", err)
	}
	d := &v.Damage
	le := binary.LittleEndian
	hdr := make([]byte, r.BlockHeaderSize)
	seen := map[uint64]bool{}
	for b, n := head, uint64(0); b != 0; n++ {
		if n >= nblocks || n >= maxBlocks || seen[b] {
			d.skip(&d.Blocks, 1, fmt.Errorf("goroutine registry: block list at %#x longer than its count %d (corrupt memory?)", b, nblocks))
			break
		}
		seen[b] = true
		if err := v.mem.ReadAt(hdr, b); err != nil {
			d.skip(&d.Blocks, int(min(nblocks, maxBlocks)-n), fmt.Errorf("reading registry block %#x: %w", b, err))
			break
		}
		nrec, used := le.Uint32(hdr[r.OffBlockNrec:]), le.Uint32(hdr[r.OffBlockUsed:])
		if used > nrec || nrec > maxBlockRecs {
			d.skip(&d.Blocks, 1, fmt.Errorf("registry block %#x: %d of %d records used (corrupt memory?)", b, used, nrec))
			used = 0
		}
		for i := uint32(0); i < used; i++ {
			if err := v.canceled(); err != nil {
				return gs, torn, err
			}
			addr := b + uint64(r.BlockHeaderSize) + uint64(i)*uint64(v.H.RecordSize)
			g, ok, err := v.readGoroutine(addr)
			switch {
			case err != nil:
				d.skip(&d.Goroutines, 1, fmt.Errorf("goroutine of record %#x: %w", addr, err))
			case !ok:
				torn++
			case g != nil:
				gs = append(gs, *g)
			}
		}
		b = le.Uint64(hdr[r.OffBlockNext:])
	}
	return gs, torn, nil
}

// ThreadGoroutine is Thread with the goroutine the thread runs as its g
// shows it (nil without a registry, or if the g cannot be read). Read
// while the thread is stopped, it is the goroutine's state at the instant
// of the thread's registers, which a registry read later, from a process
// that keeps running, may no longer show.
func (v *View) ThreadGoroutine(tid uint64) (*Record, *Goroutine, error) {
	rec, addr, err := v.threadRecord(tid)
	if rec == nil || err != nil || v.Reg == nil {
		return rec, nil, err
	}
	gp, err := target.Word(v.mem, addr+uint64(v.H.OffRecG))
	if err != nil {
		return rec, nil, nil
	}
	g, err := v.readG(gp)
	if err != nil || g.Goid != rec.Goid {
		return rec, nil, nil
	}
	g.Record, g.RecordAddr = rec, addr
	return rec, g, nil
}

// readGoroutine reads the goroutine of the record at addr by the ABI's
// consistency rule: the record's seq and the g's transition counter are the
// same before and after. It returns nil for a record never written or a
// dead goroutine, and ok == false if the goroutine kept changing.
func (v *View) readGoroutine(addr uint64) (g *Goroutine, ok bool, err error) {
	r := v.Reg
	for try := 0; try < maxRetries; try++ {
		seq, err := target.Word(v.mem, addr+uint64(v.H.OffRecSeq))
		if err != nil {
			return nil, false, fmt.Errorf("reading lineage record %#x: %w", addr, err)
		}
		if seq == 0 {
			return nil, true, nil // handed out, not yet written
		}
		gp, err := target.Word(v.mem, addr+uint64(v.H.OffRecG))
		if err != nil {
			return nil, false, fmt.Errorf("reading lineage record %#x: %w", addr, err)
		}
		t1, err := v.u32(gp + uint64(r.OffGTransitions))
		if err != nil {
			return nil, false, err
		}
		g, err := v.readG(gp)
		if err != nil {
			return nil, false, err
		}
		if g.Status == StatusDead || g.Status == StatusIdle {
			return nil, true, nil
		}
		rec, err := v.ReadRecord(addr)
		if errors.Is(err, ErrTorn) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		t2, err := v.u32(gp + uint64(r.OffGTransitions))
		if err != nil {
			return nil, false, err
		}
		if t1 != t2 || rec.Seq != seq {
			continue
		}
		g.Record, g.RecordAddr = rec, addr
		return g, true, nil
	}
	return nil, false, nil
}

func (v *View) u32(addr uint64) (uint32, error) {
	var b [4]byte
	if err := v.mem.ReadAt(b[:], addr); err != nil {
		return 0, fmt.Errorf("reading goroutine memory at %#x: %w", addr, err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// readG reads the fields of the g at gp.
func (v *View) readG(gp uint64) (*Goroutine, error) {
	buf := make([]byte, v.Reg.gSpan)
	if err := v.mem.ReadAt(buf, gp); err != nil {
		return nil, fmt.Errorf("reading g %#x: %w", gp, err)
	}
	g, err := v.parseG(gp, buf)
	if err != nil {
		return nil, err
	}
	if g.Status == StatusWaiting {
		if err := v.waitObject(g, binary.LittleEndian.Uint64(buf[v.Reg.OffGWaiting:])); err != nil {
			return nil, err
		}
	}
	if err := v.readLabels(g); err != nil {
		return nil, err
	}
	return g, nil
}

// readLabels reads g's pprof labels if the view reads them.
func (v *View) readLabels(g *Goroutine) error {
	if !v.ReadLabels || g.labels == 0 || v.Reg.LabelSize == 0 {
		return nil
	}
	ls, err := v.Reg.ReadLabels(v.mem, g.labels)
	if err != nil {
		return fmt.Errorf("goroutine %d: %w", g.Goid, err)
	}
	g.Labels = ls
	return nil
}

// ReadLabels reads the label set at addr, a g.labels value (0: none):
// the set's label slice holds each label's key and value strings. A
// registry that publishes no label layout reads none.
func (r *Registry) ReadLabels(mem Mem, addr uint64) ([]Label, error) {
	if addr == 0 || r.LabelSize == 0 {
		return nil, nil
	}
	le := binary.LittleEndian
	var sl [16]byte
	if err := mem.ReadAt(sl[:], addr+uint64(r.OffLabelsList)); err != nil {
		return nil, fmt.Errorf("reading its labels at %#x: %w", addr, err)
	}
	p, n := le.Uint64(sl[:]), le.Uint64(sl[8:])
	if n == 0 {
		return nil, nil
	}
	if n > maxLabels {
		return nil, fmt.Errorf("%d labels (corrupt memory?)", n)
	}
	buf := make([]byte, n*uint64(r.LabelSize))
	if err := mem.ReadAt(buf, p); err != nil {
		return nil, fmt.Errorf("reading its labels at %#x: %w", p, err)
	}
	str := func(b []byte) (string, error) {
		sp, sn := le.Uint64(b), le.Uint64(b[8:])
		if sn > maxLabelBytes {
			return "", fmt.Errorf("a label of %d bytes (corrupt memory?)", sn)
		}
		s := make([]byte, sn)
		if sn > 0 {
			if err := mem.ReadAt(s, sp); err != nil {
				return "", fmt.Errorf("reading a label at %#x: %w", sp, err)
			}
		}
		return string(s), nil
	}
	ls := make([]Label, n)
	for i := range ls {
		l := buf[uint64(i)*uint64(r.LabelSize):]
		k, err := str(l[r.OffLabelKey:])
		if err != nil {
			return nil, err
		}
		val, err := str(l[r.OffLabelValue:])
		if err != nil {
			return nil, err
		}
		ls[i] = Label{k, val}
	}
	return ls, nil
}

// parseG decodes a copy of the g at gp (gSpan bytes), but for what it
// waits on.
func (v *View) parseG(gp uint64, buf []byte) (*Goroutine, error) {
	g := new(Goroutine)
	if err := v.parseGInto(g, gp, buf); err != nil {
		return nil, err
	}
	return g, nil
}

// parseGInto is parseG into *g.
func (v *View) parseGInto(g *Goroutine, gp uint64, buf []byte) error {
	r := v.Reg
	le := binary.LittleEndian
	w := func(off uint32) uint64 { return le.Uint64(buf[off:]) }
	st := le.Uint32(buf[r.OffGStatus:])
	*g = Goroutine{G: gp, Goid: w(r.OffGGoid), Status: StatusUnknown, Scanning: st&r.StatusScan != 0,
		WaitSince: int64(w(r.OffGWaitSince)),
		SchedPC:   w(r.OffGSchedPC), SchedSP: w(r.OffGSchedSP), SchedBP: w(r.OffGSchedBP),
		SyscallPC: w(r.OffGSyscallPC), SyscallSP: w(r.OffGSyscallSP), SyscallBP: w(r.OffGSyscallBP),
		StackLo: w(r.OffGStackLo), StackHi: w(r.OffGStackHi)}
	if r.LabelSize != 0 {
		g.labels = w(r.OffGLabels)
	}
	if s := st &^ r.StatusScan; s < uint32(len(r.StatusMap)) {
		g.Status = r.StatusMap[s]
	}
	if g.Status == StatusWaiting {
		reason, err := v.waitReason(buf[r.OffGWaitReason])
		if err != nil {
			return err
		}
		g.WaitReason = reason
	}
	return nil
}

// waitObject reads what the g waits on from its sudogs, s the first.
func (v *View) waitObject(g *Goroutine, s uint64) error {
	buf := make([]byte, v.Reg.sudogSpan)
	for n := 0; s != 0; n++ {
		if n >= maxWaitChains {
			return fmt.Errorf("goroutine %d: select of more than %d cases (corrupt memory?)", g.Goid, maxWaitChains)
		}
		if err := v.mem.ReadAt(buf, s); err != nil {
			return fmt.Errorf("reading sudog %#x: %w", s, err)
		}
		s = v.Reg.sudogWait(g, buf)
	}
	return nil
}

// sudogWait adds what the sudog copied in b (sudogSpan bytes) names to g's
// wait object, and returns the next sudog of the goroutine's own list, or
// 0 (doc/lineage-abi.md, section 13, step 4). Only a select's cases form
// such a list: a semaphore or notify list waiter has one sudog, whose
// elem is the address it waits on and whose waitlink chains the other
// goroutines waiting at that address (the runtime's semaRoot), and a
// channel operation outside a select has one sudog.
func (r *Registry) sudogWait(g *Goroutine, b []byte) (next uint64) {
	le := binary.LittleEndian
	c := le.Uint64(b[r.OffSudogC:])
	if c == 0 {
		g.WaitAddr = le.Uint64(b[r.OffSudogElem:])
		return 0
	}
	g.WaitChans = append(g.WaitChans, c)
	if b[r.OffSudogIsSelect] == 0 {
		return 0
	}
	g.Select = true
	return le.Uint64(b[r.OffSudogWaitlink:])
}

// A reasonCache keeps the wait reason strings read so far, for the views
// of one process (ReadLive's readers share it). A nil cache keeps nothing.
type reasonCache struct {
	mu sync.Mutex
	m  map[uint8]string
}

func (c *reasonCache) get(i uint8) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[i]
	return s, ok
}

func (c *reasonCache) put(i uint8, s string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[uint8]string{}
	}
	c.m[i] = s
}

// waitReason reads the runtime's string for wait reason i, caching them.
func (v *View) waitReason(i uint8) (string, error) {
	r := v.Reg
	if uint32(i) >= r.NWaitReasons {
		return fmt.Sprintf("wait reason %d", i), nil
	}
	if s, ok := v.reasons.get(i); ok {
		return s, nil
	}
	e := r.WaitReasons + uint64(i)*uint64(r.StringSize)
	p, err := target.Word(v.mem, e)
	if err != nil {
		return "", fmt.Errorf("reading wait reason %d: %w", i, err)
	}
	n, err := target.Word(v.mem, e+8)
	if err != nil {
		return "", fmt.Errorf("reading wait reason %d: %w", i, err)
	}
	if n > 256 {
		return "", fmt.Errorf("wait reason %d: implausible length %d", i, n)
	}
	b := make([]byte, n)
	if err := v.mem.ReadAt(b, p); err != nil {
		return "", fmt.Errorf("reading wait reason %d: %w", i, err)
	}
	v.reasons.put(i, string(b))
	return string(b), nil
}
