package lineageabi

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// testTextBase is the text_base of the synthetic headers: record() turns
// the PCs it is given into offsets from it.
const testTextBase = 0x800

// v2Header builds a version-2 header as doc/lineage-abi.md lays it out,
// with the registry's static fields (the REGISTRY flag clear) and label
// offsets. Records: seq 0, g 8, goid 16, parent_goid 24, nanc 32, nstk 34,
// flags 36, depth 40, site 56, anc 64, 8-byte ancestor entries {start 0,
// gopc 4}, then the stack.
func v2Header(maxDepth, maxStack uint32) []byte {
	b := make([]byte, HeaderSize)
	copy(b, Magic)
	le := binary.LittleEndian
	recSize := 64 + 8*maxDepth + 8*maxStack
	for off, v := range map[int]uint32{16: Version, 20: HeaderSize, 24: 8, 28: FlagReady | FlagRecords | FlagTLSG, 56: maxDepth, 60: maxStack, 64: recSize, 68: 64,
		72: 0, 76: 8, 80: 16, 84: 24, 88: 32, 92: 40,
		96: 0, 100: 8, 104: 16, 108: 24, 112: 32, 116: 44, 120: 34, 124: 36, 128: 56, 132: 64,
		136: 8, 140: 0, 144: 4, 148: 64 + 8*maxDepth, 152: 48, 156: 400, 160: 500, 164: 40} {
		le.PutUint32(b[off:], v)
	}
	le.PutUint64(b[OffTLSGOffset:], uint64(^uint64(7))) // -8
	le.PutUint64(b[OffTextBase:], testTextBase)
	// The registry: 2 wait reasons of 16-byte strings; block header 64
	// bytes {next 0, nrec 8, used 12}; the g fields; the sudog fields;
	// status_scan; an identity status map; the labels.
	for i, v := range []uint32{2, 16, 64, 0, 8, 12,
		0, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, // g fields
		0, 8, 16, 24, 0x1000} { // sudog fields, status_scan
		le.PutUint32(b[OffRegTable+4*i:], v)
	}
	for i := range 16 {
		b[OffStatusMap+i] = byte(i)
	}
	for i, v := range []uint32{104, 0, 32, 0, 16} { // off_g_labels, off_labels_list, label_size, key, value
		le.PutUint32(b[OffGLabels+4*i:], v)
	}
	return b
}

// off is the offset of pc from testTextBase (0 stays unknown).
func off(pc uint64) uint32 {
	if pc == 0 {
		return 0
	}
	return uint32(pc - testTextBase)
}

// record builds a record; the ancestors' goids are not written (version 2
// has none).
func record(h *Header, seq, goid, gopc, parent uint64, anc []Anc, stk []uint64) []byte {
	b := make([]byte, h.RecordSize)
	le := binary.LittleEndian
	le.PutUint64(b[h.OffRecSeq:], seq)
	le.PutUint64(b[h.OffRecGoid:], goid)
	le.PutUint32(b[h.OffRecSite+h.OffAncStart:], off(0x1000))
	le.PutUint32(b[h.OffRecSite+h.OffAncGoPC:], off(gopc))
	le.PutUint64(b[h.OffRecParentGoid:], parent)
	le.PutUint16(b[h.OffRecNanc:], uint16(len(anc)))
	le.PutUint16(b[h.OffRecNstk:], uint16(len(stk)))
	le.PutUint32(b[h.OffRecDepth:], uint32(len(anc)))
	for i, a := range anc {
		e := b[h.OffRecAnc+uint32(i)*h.AncSize:]
		le.PutUint32(e[h.OffAncStart:], off(a.StartPC))
		le.PutUint32(e[h.OffAncGoPC:], off(a.GoPC))
	}
	for i, pc := range stk {
		le.PutUint64(b[h.OffRecStack+8*uint32(i):], pc)
	}
	return b
}

func TestParseRecordChain(t *testing.T) {
	h, err := ParseHeader(v2Header(8, 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.checkDynamic(); err != nil {
		t.Fatal(err)
	}
	b := record(h, 2, 30, 0x2000, 20, []Anc{{20, 0x1100, 0x2100}, {10, 0x1200, 0x2200}, {1, 0x1300, 0x2300}}, []uint64{0x2000, 0x2500})
	r, err := ParseRecord(h, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.StartPC != 0x1000 || r.GoPC != 0x2000 || len(r.Anc) != 3 || r.Anc[0] != (Anc{20, 0x1100, 0x2100}) || r.Anc[1] != (Anc{0, 0x1200, 0x2200}) {
		t.Fatalf("record %+v", r)
	}
	// Depth 3: the third ancestor is the root, goroutine 1.
	c := Chain(r)
	if len(c) != 3 || c[0].Goid != 30 || c[0].ParentGoid != 20 || c[1].Goid != 20 || c[1].ParentGoid != 0 || c[2].Goid != 0 || c[2].GoPC != 0x2200 || len(c[0].Stack) != 2 {
		t.Fatalf("chain %+v", c)
	}
	// Deeper than the record holds: every ancestor has a creator.
	binary.LittleEndian.PutUint32(b[h.OffRecDepth:], 9)
	if r, _ = ParseRecord(h, b); len(Chain(r)) != 4 {
		t.Fatalf("truncated chain %+v", Chain(r))
	}
}

// memMap is a fake target memory.
type memMap map[uint64][]byte

func (m memMap) ReadAt(p []byte, addr uint64) error {
	for base, b := range m {
		if addr >= base && addr+uint64(len(p)) <= base+uint64(len(b)) {
			copy(p, b[addr-base:])
			return nil
		}
	}
	return errors.New("unmapped")
}

// flipMem changes a record's seq on every read, as a writer racing with the
// reader would.
type flipMem struct {
	memMap
	seqAddr uint64
	n       uint64
}

func (m *flipMem) ReadAt(p []byte, addr uint64) error {
	m.n++
	binary.LittleEndian.PutUint64(m.memMap[m.seqAddr], 2*m.n)
	return m.memMap.ReadAt(p, addr)
}

func TestTornRecord(t *testing.T) {
	h, _ := ParseHeader(v2Header(8, 0))
	const recAddr = 0x10000
	rec := record(h, 3, 30, 0x2000, 20, nil, nil) // odd: being written
	v := &View{H: h, mem: memMap{recAddr: rec}}
	if _, err := v.ReadRecord(recAddr); !errors.Is(err, ErrTorn) {
		t.Fatalf("odd seq: err %v, want ErrTorn", err)
	}
	binary.LittleEndian.PutUint64(rec, 4)
	fm := &flipMem{memMap: memMap{recAddr: rec}, seqAddr: recAddr}
	v = &View{H: h, mem: fm}
	if _, err := v.ReadRecord(recAddr); !errors.Is(err, ErrTorn) {
		t.Fatalf("changing seq: err %v, want ErrTorn", err)
	}
	if fm.n > 3*maxRetries {
		t.Errorf("%d reads: retries not bounded", fm.n)
	}
	v = &View{H: h, mem: memMap{recAddr: rec}}
	if r, err := v.ReadRecord(recAddr); err != nil || r.Goid != 30 {
		t.Fatalf("stable record: %v %+v", err, r)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	good := v2Header(8, 0)
	for name, mut := range map[string]func([]byte){
		"magic":    func(b []byte) { b[3] = 'X' },
		"version":  func(b []byte) { binary.LittleEndian.PutUint32(b[16:], 3) },
		"size":     func(b []byte) { binary.LittleEndian.PutUint32(b[20:], 100) },
		"ptrsize":  func(b []byte) { binary.LittleEndian.PutUint32(b[24:], 3) },
		"regfield": func(b []byte) { binary.LittleEndian.PutUint32(b[80:], 60) },
	} {
		b := append([]byte(nil), good...)
		mut(b)
		if _, err := ParseHeader(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseHeader(good[:100]); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("short header: %v", err)
	}
}

// The fuzzers check that no input makes the parsers panic or read out of
// bounds, and that accepted input is self-consistent. Seeds live in
// testdata/fuzz; go test runs them.

func FuzzParseHeader(f *testing.F) {
	f.Add(v2Header(8, 0))
	f.Add(v2Header(64, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		if h.Version != Version || h.HeaderSize < HeaderSize {
			t.Fatalf("accepted %+v", h)
		}
		if h.checkDynamic() == nil {
			// Any record of record_size bytes must parse or fail cleanly.
			ParseRecord(h, make([]byte, h.RecordSize))
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	h, _ := ParseHeader(v2Header(8, 4))
	f.Add(record(h, 2, 30, 0x2000, 20, []Anc{{20, 1, 2}, {1, 3, 4}}, []uint64{0x2000}))
	f.Add(record(h, 2, 1, 0, 0, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(h, b)
		if err != nil {
			return
		}
		if len(r.Anc) > int(h.MaxDepth) || len(r.Stack) > int(h.MaxStack) {
			t.Fatalf("record exceeds capacity: %d ancestors, %d stack", len(r.Anc), len(r.Stack))
		}
		if c := Chain(r); len(c) > len(r.Anc)+1 {
			t.Fatalf("chain longer than the record: %d", len(c))
		}
	})
}

// TestVersion1: a version 1 header (208 bytes, 24-byte ancestor entries)
// is refused with the one line that says what to do.
func TestVersion1(t *testing.T) {
	b := v2Header(8, 0)[:208]
	binary.LittleEndian.PutUint32(b[OffVersion:], 1)
	binary.LittleEndian.PutUint32(b[OffHeaderSize:], 208)
	_, err := ParseHeader(b)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 1 || err.Error() != "lineage ABI version 1: this reader reads version 2; rebuild the target with this fork's toolchain" {
		t.Fatalf("version 1 header: %v", err)
	}
}
