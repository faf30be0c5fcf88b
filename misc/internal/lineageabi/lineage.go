// Package lineageabi is the one reader of the goroutine lineage ABI, version
// 1 (doc/lineage-abi.md), for the fork's tools: every offset and size of a
// region or record comes from the header the target publishes, found by its
// magic cookie in the executable's data (so stripped binaries work) and
// checked in memory. The header's own layout (the positions of its fields)
// is defined once, below; the gdb extension's Python reader is kept in sync
// with it by a test in misc/golineage.
package lineageabi

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic is the header's 16-byte cookie.
var Magic = []byte{0x7f, 'G', 'o', 'L', 'i', 'n', 'e', 'a', 'g', 'e', 0, 0, 0xa5, 0x5a, 0xc3, 0x3c}

// ErrNoABI is wrapped by Find's error for a binary without the ABI.
var ErrNoABI = errors.New("no goroutine lineage ABI")

// ErrTorn is wrapped when a record kept changing under the reader.
var ErrTorn = errors.New("inconsistent lineage record (changed while read, retries exhausted)")

// The header layout of version 1 (doc/lineage-abi.md, section 2): the
// positions of the header's own fields. Everything else a reader needs is in
// the offset table that starts at OffTable.
const (
	Version    = 1   // the major version this reader knows
	HeaderSize = 208 // header_size of version 1; larger headers append fields

	OffMagic      = 0
	OffVersion    = 16
	OffHeaderSize = 20
	OffPtrSize    = 24
	OffFlags      = 28  // [rt]
	OffSelf       = 32  // [rt] u64
	OffRegions    = 40  // [rt] u64
	OffNRegions   = 48  // [rt] u64
	OffMaxDepth   = 56  // [rt] first of 28 consecutive u32 fields, max_depth .. off_g_record
	OffRegionSize = 68  // region_size
	OffTable      = 72  // off_region_seq, the first entry of the offset table
	OffRecStack   = 152 // [rt] off_rec_stack, the table's last run-time entry
	OffGRecord    = 164 // off_g_record, the table's last entry
	OffTLSGOffset = 168 // [rt] i64

	// Header flags.
	FlagReady   = 1 << 0
	FlagRecords = 1 << 1
	FlagStacks  = 1 << 2
	FlagTLSG    = 1 << 3

	// Record flags.
	RecAncTruncated = 1 << 0
	RecCgoCallback  = 1 << 3

	maxRetries  = 3       // seq retries per read, as the ABI prescribes
	maxRegions  = 1 << 16 // bound on a registry walk beyond nregions
	maxRecBytes = 1 << 16 // sanity bound on record_size
)

// Mem reads the target's memory (a stopped process, a core file).
type Mem interface {
	ReadAt(p []byte, addr uint64) error
}

// word reads a little-endian 64-bit word.
func word(m Mem, addr uint64) (uint64, error) {
	var b [8]byte
	if err := m.ReadAt(b[:], addr); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// Header is a parsed lineage header. Static fields come from the file;
// dynamic ([rt]) fields are valid only after Load.
type Header struct {
	Version, HeaderSize, PtrSize uint32
	Flags                        uint32
	Self, Regions, NRegions      uint64
	MaxDepth, MaxStack           uint32
	RecordSize, RegionSize       uint32

	OffRegionSeq, OffRegionTid, OffRegionCur, OffRegionNext, OffRegionMid, OffRegionState uint32

	OffRecSeq, OffRecGoid, OffRecStartPC, OffRecGoPC, OffRecParentGoid uint32
	OffRecNanc, OffRecNstk, OffRecFlags, OffRecDepth, OffRecAnc        uint32
	AncSize, OffAncGoid, OffAncStartPC, OffAncGoPC                     uint32
	OffRecStack, OffGM, OffMRegion, OffGRecord                         uint32
	TLSGOffset                                                         int64
}

// ParseHeader decodes a header from b (at least header_size bytes). It
// validates the version, pointer size and that every offset lies inside the
// object it describes, so later reads cannot be steered out of bounds.
func ParseHeader(b []byte) (*Header, error) {
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("lineage header truncated (%d bytes)", len(b))
	}
	if !bytes.Equal(b[:16], Magic) {
		return nil, errors.New("lineage header: bad magic")
	}
	le := binary.LittleEndian
	u := func(off int) uint32 { return le.Uint32(b[off:]) }
	// t is the i-th u32 after max_depth (OffMaxDepth), in the order of the
	// table in doc/lineage-abi.md.
	t := func(i int) uint32 { return u(OffMaxDepth + 4*i) }
	h := &Header{Version: u(OffVersion), HeaderSize: u(OffHeaderSize), PtrSize: u(OffPtrSize), Flags: u(OffFlags),
		Self: le.Uint64(b[OffSelf:]), Regions: le.Uint64(b[OffRegions:]), NRegions: le.Uint64(b[OffNRegions:]),
		MaxDepth: t(0), MaxStack: t(1), RecordSize: t(2), RegionSize: t(3),
		OffRegionSeq: t(4), OffRegionTid: t(5), OffRegionCur: t(6), OffRegionNext: t(7), OffRegionMid: t(8), OffRegionState: t(9),
		OffRecSeq: t(10), OffRecGoid: t(11), OffRecStartPC: t(12), OffRecGoPC: t(13), OffRecParentGoid: t(14),
		OffRecNanc: t(15), OffRecNstk: t(16), OffRecFlags: t(17), OffRecDepth: t(18), OffRecAnc: t(19),
		AncSize: t(20), OffAncGoid: t(21), OffAncStartPC: t(22), OffAncGoPC: t(23),
		OffRecStack: t(24), OffGM: t(25), OffMRegion: t(26), OffGRecord: t(27),
		TLSGOffset: int64(le.Uint64(b[OffTLSGOffset:])),
	}
	if h.Version != Version {
		return nil, fmt.Errorf("lineage ABI version %d is not supported (this reader knows version 1)", h.Version)
	}
	if h.HeaderSize < HeaderSize {
		return nil, fmt.Errorf("lineage header size %d is smaller than version 1's %d", h.HeaderSize, HeaderSize)
	}
	if h.PtrSize != 8 && h.PtrSize != 4 {
		return nil, fmt.Errorf("lineage header: pointer size %d", h.PtrSize)
	}
	if h.RegionSize < 8 || h.RegionSize > 4096 {
		return nil, fmt.Errorf("lineage header: region size %d", h.RegionSize)
	}
	for _, f := range []struct {
		off, size uint32
	}{{h.OffRegionSeq, 8}, {h.OffRegionTid, 8}, {h.OffRegionCur, 8}, {h.OffRegionNext, 8}, {h.OffRegionMid, 8}, {h.OffRegionState, 4}} {
		if uint64(f.off)+uint64(f.size) > uint64(h.RegionSize) {
			return nil, fmt.Errorf("lineage header: region field at %d outside the %d-byte region", f.off, h.RegionSize)
		}
	}
	if h.AncSize < 24 || h.AncSize > 4096 {
		return nil, fmt.Errorf("lineage header: ancestor size %d", h.AncSize)
	}
	for _, off := range []uint32{h.OffAncGoid, h.OffAncStartPC, h.OffAncGoPC} {
		if uint64(off)+8 > uint64(h.AncSize) {
			return nil, fmt.Errorf("lineage header: ancestor field at %d outside the %d-byte entry", off, h.AncSize)
		}
	}
	return h, nil
}

// checkDynamic validates the run-time fields (after Load).
func (h *Header) checkDynamic() error {
	if h.Flags&FlagReady == 0 {
		return errors.New("lineage header not initialized yet (the runtime has not finished starting)")
	}
	if h.MaxDepth > 1024 || h.MaxStack > 1024 || h.RecordSize == 0 || h.RecordSize > maxRecBytes {
		return fmt.Errorf("lineage header: implausible sizes (max_depth %d, max_stack %d, record_size %d)", h.MaxDepth, h.MaxStack, h.RecordSize)
	}
	fixed := []struct{ off, size uint32 }{{h.OffRecSeq, 8}, {h.OffRecGoid, 8}, {h.OffRecStartPC, 8}, {h.OffRecGoPC, 8},
		{h.OffRecParentGoid, 8}, {h.OffRecNanc, 4}, {h.OffRecNstk, 4}, {h.OffRecFlags, 4}, {h.OffRecDepth, 4}}
	for _, f := range fixed {
		if uint64(f.off)+uint64(f.size) > uint64(h.RecordSize) {
			return fmt.Errorf("lineage header: record field at %d outside the %d-byte record", f.off, h.RecordSize)
		}
	}
	if uint64(h.OffRecAnc)+uint64(h.AncSize)*uint64(h.MaxDepth) > uint64(h.RecordSize) ||
		uint64(h.OffRecStack)+8*uint64(h.MaxStack) > uint64(h.RecordSize) {
		return fmt.Errorf("lineage header: arrays do not fit the %d-byte record", h.RecordSize)
	}
	return nil
}

// ABI is the lineage header of one executable, found in its file.
type ABI struct {
	Addr   uint64 // link-time address of the header
	Static *Header
}

// Find locates the lineage header in an executable's data: the .noptrdata
// section, or every writable PT_LOAD segment of a file without section
// headers. An executable without the header gives ErrNoABI.
func Find(f *elf.File) (*ABI, error) {
	type area struct {
		addr uint64
		data []byte
	}
	var areas []area
	if s := f.Section(".noptrdata"); s != nil && s.Type != elf.SHT_NOBITS {
		if d, err := s.Data(); err == nil {
			areas = append(areas, area{s.Addr, d})
		}
	}
	if len(areas) == 0 {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 && p.Filesz > 0 {
				d := make([]byte, p.Filesz)
				if _, err := p.ReadAt(d, 0); err == nil {
					areas = append(areas, area{p.Vaddr, d})
				}
			}
		}
	}
	for _, a := range areas {
		for i := 0; ; {
			j := bytes.Index(a.data[i:], Magic)
			if j < 0 {
				break
			}
			off := i + j
			i = off + 1
			if (a.addr+uint64(off))%8 != 0 || off+HeaderSize > len(a.data) {
				continue
			}
			h, err := ParseHeader(a.data[off:])
			if err != nil {
				return nil, err
			}
			return &ABI{Addr: a.addr + uint64(off), Static: h}, nil
		}
	}
	return nil, ErrNoABI
}

// At reports whether, at load bias bias, mem holds the header where its
// self field says it is: how a reader finds the bias of a position-
// independent executable without its auxiliary vector (a core that lost
// its notes).
func (a *ABI) At(mem Mem, bias uint64) bool {
	buf := make([]byte, HeaderSize)
	if err := mem.ReadAt(buf, a.Addr+bias); err != nil {
		return false
	}
	h, err := ParseHeader(buf)
	return err == nil && h.Flags&FlagReady != 0 && h.Self == a.Addr+bias
}

// View is the lineage state of one stopped process or core: the header as
// the process holds it and its registry of regions.
type View struct {
	H       *Header
	Addr    uint64 // runtime address of the header
	mem     Mem
	regions map[uint64]uint64 // tid -> region address (active regions)
	Note    string            // why the view is empty, if it is
	Reg     *Registry         // nil if the target publishes no registry
	Damage  Damage            // what Load and Goroutines skipped in damaged memory
	reasons *reasonCache      // wait reason strings read so far
	ctx     context.Context   // ends reads of every goroutine (WithContext)
}

// Load reads the header and the region registry from the target's memory.
func (a *ABI) Load(mem Mem, bias uint64) (*View, error) {
	addr := a.Addr + bias
	buf := make([]byte, min(max(a.Static.HeaderSize, HeaderSize), RegistryHeaderSize))
	if err := mem.ReadAt(buf, addr); err != nil {
		return nil, fmt.Errorf("reading the lineage header at %#x: %v", addr, err)
	}
	h, err := ParseHeader(buf)
	if err != nil {
		return nil, err
	}
	if h.Flags&FlagReady != 0 && h.Self != addr {
		return nil, fmt.Errorf("lineage header at %#x says it is at %#x (wrong load bias or a foreign core?)", addr, h.Self)
	}
	if err := h.checkDynamic(); err != nil {
		return nil, err
	}
	v := &View{H: h, Addr: addr, mem: mem, regions: map[uint64]uint64{}, reasons: &reasonCache{}}
	if v.Reg, err = parseRegistry(h, buf); err != nil {
		return nil, err
	}
	if h.Flags&FlagRecords == 0 {
		v.Note = "lineage records are off in this process (GODEBUG=lineage=0)"
	}
	limit := h.NRegions
	if limit > maxRegions {
		limit = maxRegions
	}
	seen := map[uint64]bool{}
	for r, n := h.Regions, uint64(0); r != 0 && n < limit; n++ {
		if seen[r] {
			return nil, fmt.Errorf("lineage region registry loops at %#x", r)
		}
		seen[r] = true
		tid, state, _, ok, err := v.readRegion(r)
		var next uint64
		if err == nil {
			if next, err = word(mem, r+uint64(h.OffRegionNext)); err != nil {
				err = fmt.Errorf("reading lineage region %#x: %w", r, err)
			}
		}
		if err != nil {
			// The rest of the list is out of reach: count it and go on
			// with the regions read (a core cut short).
			v.Damage.skip(&v.Damage.Regions, int(limit-n), err)
			break
		}
		if ok && state != 0 && tid != 0 {
			v.regions[tid] = r
		}
		r = next
	}
	return v, nil
}

// WithMem returns a copy of v that reads regions and records through mem
// (e.g. a cache valid while one thread is stopped).
func (v *View) WithMem(mem Mem) *View {
	c := *v
	c.mem = mem
	return &c
}

// readRegion applies the region rule: a stable (even, unchanged) seq around
// the reads of tid, state and cur. ok is false if the region stayed in an
// update (a thread stopped inside its own M start or exit).
func (v *View) readRegion(r uint64) (tid uint64, state uint32, cur uint64, ok bool, err error) {
	h := v.H
	buf := make([]byte, h.RegionSize)
	le := binary.LittleEndian
	for try := 0; try < maxRetries; try++ {
		if err := v.mem.ReadAt(buf, r); err != nil {
			return 0, 0, 0, false, fmt.Errorf("reading lineage region %#x: %w", r, err)
		}
		s1 := le.Uint64(buf[h.OffRegionSeq:])
		if s1&1 != 0 {
			continue
		}
		tid, state, cur = le.Uint64(buf[h.OffRegionTid:]), le.Uint32(buf[h.OffRegionState:]), le.Uint64(buf[h.OffRegionCur:])
		s2, err := word(v.mem, r+uint64(h.OffRegionSeq))
		if err != nil {
			return 0, 0, 0, false, err
		}
		if s1 == s2 {
			return tid, state, cur, true, nil
		}
	}
	return 0, 0, 0, false, nil
}

// Threads returns the tids of all active regions (reader C).
func (v *View) Threads() []uint64 {
	var out []uint64
	for t := range v.regions {
		out = append(out, t)
	}
	return out
}

// Record is one decoded lineage record.
type Record struct {
	Seq, Goid, StartPC, GoPC, ParentGoid uint64
	Nanc, Nstk, Flags, Depth             uint32
	Anc                                  []Anc
	Stack                                []uint64

	Bad     Bad  // values found impossible and zeroed (Plausible.CheckRecord)
	checked bool // CheckRecord ran
}

// Anc is one inline ancestor.
type Anc struct{ Goid, StartPC, GoPC uint64 }

// ParseRecord decodes a record copied from memory (len(b) >= record_size).
// Counts are clamped to the header's capacities, so a corrupt record can
// make the chain wrong but never make the reader read out of bounds.
func ParseRecord(h *Header, b []byte) (*Record, error) {
	if uint64(len(b)) < uint64(h.RecordSize) {
		return nil, fmt.Errorf("lineage record truncated (%d of %d bytes)", len(b), h.RecordSize)
	}
	le := binary.LittleEndian
	r := &Record{Seq: le.Uint64(b[h.OffRecSeq:]), Goid: le.Uint64(b[h.OffRecGoid:]), StartPC: le.Uint64(b[h.OffRecStartPC:]),
		GoPC: le.Uint64(b[h.OffRecGoPC:]), ParentGoid: le.Uint64(b[h.OffRecParentGoid:]),
		Nanc: le.Uint32(b[h.OffRecNanc:]), Nstk: le.Uint32(b[h.OffRecNstk:]), Flags: le.Uint32(b[h.OffRecFlags:]), Depth: le.Uint32(b[h.OffRecDepth:])}
	if r.Nanc > h.MaxDepth {
		return nil, fmt.Errorf("lineage record: %d ancestors, capacity %d", r.Nanc, h.MaxDepth)
	}
	if r.Nstk > h.MaxStack {
		return nil, fmt.Errorf("lineage record: %d stack entries, capacity %d", r.Nstk, h.MaxStack)
	}
	if r.Nanc > 0 {
		r.Anc = make([]Anc, r.Nanc)
	}
	for i := range r.Anc {
		e := b[h.OffRecAnc+uint32(i)*h.AncSize:]
		r.Anc[i] = Anc{le.Uint64(e[h.OffAncGoid:]), le.Uint64(e[h.OffAncStartPC:]), le.Uint64(e[h.OffAncGoPC:])}
	}
	if r.Nstk > 0 {
		r.Stack = make([]uint64, r.Nstk)
	}
	for i := range r.Stack {
		r.Stack[i] = le.Uint64(b[h.OffRecStack+8*uint32(i):])
	}
	return r, nil
}

// ReadRecord copies the record at addr under its sequence counter, retrying
// as the ABI prescribes.
func (v *View) ReadRecord(addr uint64) (*Record, error) {
	h := v.H
	buf := make([]byte, h.RecordSize)
	for try := 0; try < maxRetries; try++ {
		s1, err := word(v.mem, addr+uint64(h.OffRecSeq))
		if err != nil {
			return nil, fmt.Errorf("reading lineage record %#x: %v", addr, err)
		}
		if s1&1 != 0 {
			continue
		}
		if err := v.mem.ReadAt(buf, addr); err != nil {
			return nil, fmt.Errorf("reading lineage record %#x: %v", addr, err)
		}
		s2, err := word(v.mem, addr+uint64(h.OffRecSeq))
		if err != nil {
			return nil, err
		}
		if s1 != s2 || binary.LittleEndian.Uint64(buf[h.OffRecSeq:]) != s1 {
			continue
		}
		return ParseRecord(h, buf)
	}
	return nil, fmt.Errorf("record at %#x: %w", addr, ErrTorn)
}

// Thread returns the record of the goroutine running on thread tid, or nil
// if the thread runs no goroutine.
func (v *View) Thread(tid uint64) (*Record, error) {
	rec, _, err := v.threadRecord(tid)
	return rec, err
}

// threadRecord is Thread with the record's address.
func (v *View) threadRecord(tid uint64) (*Record, uint64, error) {
	r, ok := v.regions[tid]
	if !ok {
		return nil, 0, nil // not an M with a region (or a region mid-update)
	}
	_, _, cur, ok, err := v.readRegion(r)
	if err != nil || !ok || cur == 0 {
		return nil, 0, err
	}
	rec, err := v.ReadRecord(cur)
	return rec, cur, err
}

// RunsGoroutine reports whether thread tid may be running a goroutine: it
// has a region, and the region's cur is set or cannot be read consistently.
// It is a hint for a sampler that stops only the threads whose goroutines
// it samples: an M between goroutines, or a thread without a region, has
// none to sample.
func (v *View) RunsGoroutine(tid uint64) bool {
	r, ok := v.regions[tid]
	if !ok {
		return false
	}
	_, _, cur, ok, err := v.readRegion(r)
	return err != nil || !ok || cur != 0 // unsure: let the stopped read decide
}

// Step is one step of a goroutine's lineage: goroutine Goid was created by
// goroutine ParentGoid at GoPC (a go statement's return address), optionally
// with the parent's stack at that moment (creation stack, return addresses).
type Step struct {
	Goid       uint64
	ParentGoid uint64
	GoPC       uint64
	StartPC    uint64
	Stack      []uint64
}

// Chain turns a record into lineage steps: the goroutine itself (created by
// its parent at gopc, with the creation stack), then each ancestor.
// Goroutine 1 and cgo-callback goroutines have no "created by", as in the
// runtime's tracebacks.
func Chain(rec *Record) []Step {
	var out []Step
	if rec.Flags&RecCgoCallback != 0 || rec.Goid == 1 || rec.GoPC == 0 {
		return nil
	}
	out = append(out, Step{Goid: rec.Goid, ParentGoid: rec.ParentGoid, GoPC: rec.GoPC, StartPC: rec.StartPC, Stack: rec.Stack})
	for i, a := range rec.Anc {
		if a.Goid == 1 || a.GoPC == 0 {
			break // the main goroutine (or one the runtime started) ends the chain
		}
		var parent uint64
		if i+1 < len(rec.Anc) {
			parent = rec.Anc[i+1].Goid
		}
		out = append(out, Step{Goid: a.Goid, ParentGoid: parent, GoPC: a.GoPC, StartPC: a.StartPC})
	}
	return out
}

// Truncated reports whether older ancestors were dropped.
func (r *Record) Truncated() bool { return r.Flags&RecAncTruncated != 0 }
