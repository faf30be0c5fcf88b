// Package lineageabi is the one reader of the goroutine lineage ABI, version
// 2 (doc/lineage-abi.md), for the fork's tools: every offset and size of a
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
	"slices"

	"fpsafe.dev/misc/internal/target"
)

// Magic is the header's 16-byte cookie.
var Magic = []byte{0x7f, 'G', 'o', 'L', 'i', 'n', 'e', 'a', 'g', 'e', 0, 0, 0xa5, 0x5a, 0xc3, 0x3c}

// ErrNoABI is wrapped by Find's error for a binary without the ABI.
var ErrNoABI = errors.New("no goroutine lineage ABI")

// ErrTorn is wrapped when a record kept changing under the reader.
var ErrTorn = errors.New("inconsistent lineage record (changed while read, retries exhausted)")

// The header layout of version 2 (doc/lineage-abi.md, section 2): the
// positions of the header's own fields. HeaderFields lists them all, with
// the fields the runtime fills in at run time (*[rt]*): every other field
// is in the executable file and identical in memory.
const (
	Version    = 2   // the major version this reader knows
	HeaderSize = 376 // header_size of version 2; larger headers append fields

	OffMagic      = 0
	OffVersion    = 16
	OffHeaderSize = 20
	OffPtrSize    = 24
	OffFlags      = 28  // [rt]
	OffSelf       = 32  // [rt] u64
	OffRegions    = 40  // [rt] u64
	OffNRegions   = 48  // [rt] u64
	OffMaxDepth   = 56  // [rt]
	OffMaxStack   = 60  // [rt]
	OffRecordSize = 64  // [rt]
	OffRegionSize = 68  // region_size
	OffTable      = 72  // off_region_seq, the first of the u32 run up to off_rec_changes
	OffRecStack   = 148 // [rt] off_rec_stack
	OffGRecord    = 160 // off_g_record
	OffRecChanges = 164 // off_rec_changes, the run's last entry (reserved, 0, before it was added)
	OffTLSGOffset = 168 // [rt] i64
	OffTextBase   = 176 // [rt] u64
	OffBlocks     = 184 // [rt] u64
	OffNBlocks    = 192 // [rt] u64
	OffWaitReason = 200 // [rt] u64, wait_reasons
	OffRegTable   = 208 // n_wait_reasons, the first of the u32 run up to status_scan
	OffStatusScan = 304
	OffStatusMap  = 308 // [16]u8
	OffGLabels    = 324 // off_g_labels, the first of the label u32s
	OffReserved   = 344 // [32]byte

	// Header flags.
	FlagReady   = 1 << 0
	FlagRecords = 1 << 1
	FlagStacks  = 1 << 2
	FlagTLSG    = 1 << 3

	// Record flags.
	RecAncTruncated  = 1 << 0
	RecParentUnknown = 1 << 2
	RecCgoCallback   = 1 << 3

	maxRetries  = 3       // seq retries per read, as the ABI prescribes
	maxRegions  = 1 << 16 // bound on a registry walk beyond nregions
	maxRecBytes = 1 << 16 // sanity bound on record_size
)

// A HeaderField is one field of the header: its name in doc/lineage-abi.md,
// position and size, and whether the runtime fills it in (*[rt]*).
type HeaderField struct {
	Name      string
	Off, Size int
	RT        bool
}

// HeaderFields is the version 2 header, in order.
var HeaderFields = func() []HeaderField {
	fs := []HeaderField{{"magic", 0, 16, false}, {"version", 16, 4, false}, {"header_size", 20, 4, false},
		{"ptr_size", 24, 4, false}, {"flags", 28, 4, true}, {"self", 32, 8, true}, {"regions", 40, 8, true},
		{"nregions", 48, 8, true}, {"max_depth", 56, 4, true}, {"max_stack", 60, 4, true}, {"record_size", 64, 4, true}}
	u32s := func(off int, names ...string) {
		for i, n := range names {
			fs = append(fs, HeaderField{n, off + 4*i, 4, n == "off_rec_stack"})
		}
	}
	u32s(OffRegionSize, tableNames...)
	fs = append(fs, HeaderField{"tls_g_offset", 168, 8, true},
		HeaderField{"text_base", 176, 8, true}, HeaderField{"blocks", 184, 8, true},
		HeaderField{"nblocks", 192, 8, true}, HeaderField{"wait_reasons", 200, 8, true})
	u32s(OffRegTable, regTableNames...)
	fs = append(fs, HeaderField{"status_map", OffStatusMap, 16, false})
	u32s(OffGLabels, labelNames...)
	return append(fs, HeaderField{"reserved", OffReserved, HeaderSize - OffReserved, false})
}()

// The names of the header's runs of u32 fields, in order.
var (
	tableNames = []string{"region_size", "off_region_seq", "off_region_tid", "off_region_cur", "off_region_next",
		"off_region_mid", "off_region_state", "off_rec_seq", "off_rec_g", "off_rec_goid", "off_rec_parent_goid",
		"off_rec_nanc", "off_rec_nstk", "off_rec_flags", "off_rec_depth", "off_rec_site", "off_rec_anc",
		"anc_size", "off_anc_start", "off_anc_gopc", "off_rec_stack", "off_g_m", "off_m_region", "off_g_record",
		"off_rec_changes"}
	regTableNames = []string{"n_wait_reasons", "string_size", "block_header_size", "off_block_next",
		"off_block_nrec", "off_block_used", "off_g_goid", "off_g_status", "off_g_transitions", "off_g_waitreason",
		"off_g_waitsince", "off_g_sched_sp", "off_g_sched_pc", "off_g_sched_bp", "off_g_syscall_sp",
		"off_g_syscall_pc", "off_g_syscall_bp", "off_g_stack_lo", "off_g_stack_hi", "off_g_waiting",
		"off_sudog_waitlink", "off_sudog_elem", "off_sudog_c", "off_sudog_isselect", "status_scan"}
	labelNames = []string{"off_g_labels", "off_labels_list", "label_size", "off_label_key", "off_label_value"}
)

// Mem reads the target's memory (a stopped process, a core file); it is
// target.Mem, the one memory interface of the repository's readers.
type Mem = target.Mem

// Header is a parsed lineage header. Static fields come from the file;
// dynamic ([rt]) fields are valid only after Load.
type Header struct {
	Version, HeaderSize, PtrSize uint32
	Flags                        uint32
	Self, Regions, NRegions      uint64
	MaxDepth, MaxStack           uint32
	RecordSize, RegionSize       uint32

	OffRegionSeq, OffRegionTid, OffRegionCur, OffRegionNext, OffRegionMid, OffRegionState uint32

	OffRecSeq, OffRecG, OffRecGoid, OffRecParentGoid             uint32
	OffRecNanc, OffRecNstk, OffRecFlags, OffRecDepth, OffRecSite uint32
	OffRecAnc, AncSize, OffAncStart, OffAncGoPC                  uint32
	OffRecStack, OffGM, OffMRegion, OffGRecord                   uint32
	// OffRecChanges is the record's change count (u32): incremented
	// when the goroutine starts to run and when its g struct starts a
	// new goroutine (not at its other status changes, which the g's
	// transitions count), 128 bytes apart from the next goroutine's
	// rather than a g struct apart, for readers that copy every count
	// (Cache: a goroutine read parked is unchanged while its count is).
	OffRecChanges uint32
	TLSGOffset    int64
	TextBase      uint64 // site and ancestor offsets are from here

	raw []byte // the header's bytes: the registry part is parsed from them
}

// VersionError is ParseHeader's error for a header of another version.
type VersionError struct{ Version uint32 }

func (e *VersionError) Error() string {
	return fmt.Sprintf("lineage ABI version %d: this reader reads version %d; rebuild the target with this fork's toolchain", e.Version, Version)
}

// ParseHeader decodes a header from b (at least header_size bytes). It
// validates the version, pointer size and that every offset lies inside the
// object it describes, so later reads cannot be steered out of bounds.
func ParseHeader(b []byte) (*Header, error) {
	if len(b) >= OffHeaderSize && bytes.Equal(b[:16], Magic) {
		if v := binary.LittleEndian.Uint32(b[OffVersion:]); v != Version {
			return nil, &VersionError{v}
		}
	}
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("lineage header truncated (%d bytes)", len(b))
	}
	if !bytes.Equal(b[:16], Magic) {
		return nil, errors.New("lineage header: bad magic")
	}
	le := binary.LittleEndian
	u := func(off int) uint32 { return le.Uint32(b[off:]) }
	// t is the i-th u32 of the run from region_size (OffRegionSize), in
	// the order of tableNames.
	t := func(i int) uint32 { return u(OffRegionSize + 4*i) }
	h := &Header{Version: u(OffVersion), HeaderSize: u(OffHeaderSize), PtrSize: u(OffPtrSize), Flags: u(OffFlags),
		Self: le.Uint64(b[OffSelf:]), Regions: le.Uint64(b[OffRegions:]), NRegions: le.Uint64(b[OffNRegions:]),
		MaxDepth: u(OffMaxDepth), MaxStack: u(OffMaxStack), RecordSize: u(OffRecordSize), RegionSize: t(0),
		OffRegionSeq: t(1), OffRegionTid: t(2), OffRegionCur: t(3), OffRegionNext: t(4), OffRegionMid: t(5), OffRegionState: t(6),
		OffRecSeq: t(7), OffRecG: t(8), OffRecGoid: t(9), OffRecParentGoid: t(10),
		OffRecNanc: t(11), OffRecNstk: t(12), OffRecFlags: t(13), OffRecDepth: t(14), OffRecSite: t(15), OffRecAnc: t(16),
		AncSize: t(17), OffAncStart: t(18), OffAncGoPC: t(19),
		OffRecStack: t(20), OffGM: t(21), OffMRegion: t(22), OffGRecord: t(23), OffRecChanges: t(24),
		TLSGOffset: int64(le.Uint64(b[OffTLSGOffset:])), TextBase: le.Uint64(b[OffTextBase:]),
		raw: bytes.Clone(b[:HeaderSize]),
	}
	if h.HeaderSize < HeaderSize {
		return nil, fmt.Errorf("lineage header size %d is smaller than version 2's %d", h.HeaderSize, HeaderSize)
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
	if h.AncSize < 8 || h.AncSize > 4096 {
		return nil, fmt.Errorf("lineage header: ancestor size %d", h.AncSize)
	}
	for _, off := range []uint32{h.OffAncStart, h.OffAncGoPC} {
		if uint64(off)+4 > uint64(h.AncSize) {
			return nil, fmt.Errorf("lineage header: ancestor field at %d outside the %d-byte entry", off, h.AncSize)
		}
	}
	return h, nil
}

// checkDynamic validates the run-time fields (after Load).
func (h *Header) checkDynamic() error {
	if h.Flags&FlagReady == 0 {
		return ErrNotReady
	}
	if h.MaxDepth > 1024 || h.MaxStack > 1024 || h.RecordSize == 0 || h.RecordSize > maxRecBytes {
		return fmt.Errorf("lineage header: implausible sizes (max_depth %d, max_stack %d, record_size %d)", h.MaxDepth, h.MaxStack, h.RecordSize)
	}
	fixed := []struct{ off, size uint32 }{{h.OffRecSeq, 8}, {h.OffRecG, 8}, {h.OffRecGoid, 8}, {h.OffRecParentGoid, 8},
		{h.OffRecNanc, 2}, {h.OffRecNstk, 2}, {h.OffRecFlags, 2}, {h.OffRecDepth, 4}, {h.OffRecChanges, 4}, {h.OffRecSite, h.AncSize}}
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

// Registry decodes the registry fields of h (the goroutine and label
// layout), nil if h publishes no registry.
func (h *Header) Registry() (*Registry, error) {
	return parseRegistry(h, h.raw)
}

// PC turns a site or ancestor entry's offset into a PC: 0 stays unknown.
func (h *Header) PC(off uint32) uint64 {
	if off == 0 {
		return 0
	}
	return h.TextBase + uint64(off)
}

// ABI is the lineage header of one executable, found in its file.
type ABI struct {
	Addr   uint64 // link-time address of the header
	Static *Header
}

// Find locates the lineage header in an executable's data: the .noptrdata
// section, or every writable PT_LOAD segment of a file without section
// headers. An executable without the header gives ErrNoABI. The magic
// found elsewhere (a reader linked into the executable holds its own copy
// of Magic, in the same section) is passed over: the error of the first
// candidate is returned only if no candidate parses.
func Find(f *elf.File) (*ABI, error) {
	type area struct {
		addr uint64
		data []byte
	}
	var areas []area
	var first error
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
			if (a.addr+uint64(off))%8 != 0 || off+OffPtrSize > len(a.data) {
				continue
			}
			h, err := ParseHeader(a.data[off:])
			if err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			return &ABI{Addr: a.addr + uint64(off), Static: h}, nil
		}
	}
	if first != nil {
		return nil, first
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

	// ReadLabels has Goroutines and ReadLive read each goroutine's pprof
	// labels (a few reads more for each goroutine that has labels).
	ReadLabels bool
}

// ErrNotReady is the error of reading the header of a process whose
// runtime has not initialized it yet: one that has just started.
var ErrNotReady = errors.New("lineage header not initialized yet (the runtime has not finished starting)")

// LoadHeader reads the header from the target's memory and checks its
// run-time fields. A process that has not initialized it yet gives an error
// wrapping ErrNotReady.
func (a *ABI) LoadHeader(mem Mem, bias uint64) (*Header, error) {
	h, _, err := a.loadHeader(mem, bias)
	return h, err
}

func (a *ABI) loadHeader(mem Mem, bias uint64) (*Header, []byte, error) {
	addr := a.Addr + bias
	buf := make([]byte, HeaderSize)
	if err := mem.ReadAt(buf, addr); err != nil {
		return nil, nil, fmt.Errorf("reading the lineage header at %#x: %w", addr, err)
	}
	h, err := ParseHeader(buf)
	if err != nil {
		return nil, nil, err
	}
	if h.Flags&FlagReady != 0 && h.Self != addr {
		return nil, nil, fmt.Errorf("lineage header at %#x says it is at %#x (wrong load bias or a foreign core?)", addr, h.Self)
	}
	if err := h.checkDynamic(); err != nil {
		return nil, nil, err
	}
	return h, buf, nil
}

// Load reads the header and the region registry from the target's memory.
func (a *ABI) Load(mem Mem, bias uint64) (*View, error) {
	h, buf, err := a.loadHeader(mem, bias)
	if err != nil {
		return nil, err
	}
	addr := a.Addr + bias
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
			if next, err = target.Word(mem, r+uint64(h.OffRegionNext)); err != nil {
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
		s2, err := target.Word(v.mem, r+uint64(h.OffRegionSeq))
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

// Record is one decoded lineage record. StartPC, GoPC and the ancestors'
// PCs are addresses (text_base plus the record's offsets; 0 if unknown).
type Record struct {
	Seq, Goid, StartPC, GoPC, ParentGoid uint64
	Nanc, Nstk, Flags, Depth             uint32
	Anc                                  []Anc
	Stack                                []uint64

	Bad     Bad  // values found impossible and zeroed (Plausible.CheckRecord)
	checked bool // CheckRecord ran
}

// Anc is one inline ancestor: Anc[0] is the parent, whose goid is the
// record's parent goid; version 2 keeps no goid for older ancestors, whose
// Goid is 0 (shown without one).
type Anc struct{ Goid, StartPC, GoPC uint64 }

// Clone returns a copy of r that shares no memory with it.
func (r *Record) Clone() *Record {
	c := *r
	c.Anc, c.Stack = slices.Clone(r.Anc), slices.Clone(r.Stack)
	return &c
}

// ParseRecord decodes a record copied from memory (len(b) >= record_size).
// Counts are clamped to the header's capacities, so a corrupt record can
// make the chain wrong but never make the reader read out of bounds.
func ParseRecord(h *Header, b []byte) (*Record, error) {
	r := new(Record)
	if err := ParseRecordInto(r, h, b); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseRecordInto is ParseRecord into r, reusing the arrays of r's
// ancestors and stack.
func ParseRecordInto(r *Record, h *Header, b []byte) error {
	if uint64(len(b)) < uint64(h.RecordSize) {
		return fmt.Errorf("lineage record truncated (%d of %d bytes)", len(b), h.RecordSize)
	}
	le := binary.LittleEndian
	entry := func(off uint32) (start, gopc uint64) {
		e := b[off:]
		return h.PC(le.Uint32(e[h.OffAncStart:])), h.PC(le.Uint32(e[h.OffAncGoPC:]))
	}
	*r = Record{Seq: le.Uint64(b[h.OffRecSeq:]), Goid: le.Uint64(b[h.OffRecGoid:]), ParentGoid: le.Uint64(b[h.OffRecParentGoid:]),
		Nanc: uint32(le.Uint16(b[h.OffRecNanc:])), Nstk: uint32(le.Uint16(b[h.OffRecNstk:])),
		Flags: uint32(le.Uint16(b[h.OffRecFlags:])), Depth: le.Uint32(b[h.OffRecDepth:]),
		Anc: r.Anc[:0], Stack: r.Stack[:0]}
	r.StartPC, r.GoPC = entry(h.OffRecSite)
	if r.Nanc > h.MaxDepth {
		return fmt.Errorf("lineage record: %d ancestors, capacity %d", r.Nanc, h.MaxDepth)
	}
	if r.Nstk > h.MaxStack {
		return fmt.Errorf("lineage record: %d stack entries, capacity %d", r.Nstk, h.MaxStack)
	}
	for i := range r.Nanc {
		var a Anc
		if i == 0 {
			a.Goid = r.ParentGoid
		}
		a.StartPC, a.GoPC = entry(h.OffRecAnc + i*h.AncSize)
		r.Anc = append(r.Anc, a)
	}
	for i := range r.Nstk {
		r.Stack = append(r.Stack, le.Uint64(b[h.OffRecStack+8*i:]))
	}
	return nil
}

// ReadRecord copies the record at addr under its sequence counter, retrying
// as the ABI prescribes.
func (v *View) ReadRecord(addr uint64) (*Record, error) {
	h := v.H
	buf := make([]byte, h.RecordSize)
	for try := 0; try < maxRetries; try++ {
		s1, err := target.Word(v.mem, addr+uint64(h.OffRecSeq))
		if err != nil {
			return nil, fmt.Errorf("reading lineage record %#x: %w", addr, err)
		}
		if s1&1 != 0 {
			continue
		}
		if err := v.mem.ReadAt(buf, addr); err != nil {
			return nil, fmt.Errorf("reading lineage record %#x: %w", addr, err)
		}
		s2, err := target.Word(v.mem, addr+uint64(h.OffRecSeq))
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
// its parent at gopc, with the creation stack), then each ancestor. Only the
// goroutine and its parent have goids (Goid, ParentGoid 0 beyond: unknown).
// Goroutine 1, goroutines the runtime started and cgo-callback goroutines
// have no "created by", as in the runtime's tracebacks: the ancestor at
// depth 0 ends the chain (Record.Root).
func Chain(rec *Record) []Step {
	var out []Step
	if !HasCreator(rec) {
		return nil
	}
	out = append(out, Step{Goid: rec.Goid, ParentGoid: rec.ParentGoid, GoPC: rec.GoPC, StartPC: rec.StartPC, Stack: rec.Stack})
	for i, a := range rec.Anc {
		if a.GoPC == 0 || rec.Root(i) {
			break // the main goroutine (or one the runtime started) ends the chain
		}
		out = append(out, Step{Goid: a.Goid, GoPC: a.GoPC, StartPC: a.StartPC})
	}
	return out
}

// HasCreator reports whether rec's goroutine was created by a go statement
// the record names (Chain is not empty): not goroutine 1, nor a goroutine
// the runtime made for a cgo callback.
func HasCreator(rec *Record) bool {
	return rec.Flags&RecCgoCallback == 0 && rec.Goid != 1 && rec.GoPC != 0
}

// Root reports whether ancestor i is the root of the record's lineage (at
// depth 0: goroutine 1, or a goroutine the runtime started), which has no
// creator to show. A creator that had no record of its own
// (RecParentUnknown) is shown as created where it was.
func (r *Record) Root(i int) bool {
	if i == 0 && r.ParentGoid == 1 {
		return true
	}
	return r.Flags&RecParentUnknown == 0 && uint64(i)+1 == uint64(r.Depth)
}

// Truncated reports whether older ancestors were dropped.
func (r *Record) Truncated() bool { return r.Flags&RecAncTruncated != 0 }
