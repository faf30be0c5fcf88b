package lineageabi

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// v1Header builds a version-1 header as doc/lineage-abi.md lays it out.
func v1Header(maxDepth, maxStack uint32) []byte {
	b := make([]byte, 208)
	copy(b, Magic)
	le := binary.LittleEndian
	recSize := 56 + 24*maxDepth + 8*maxStack
	for off, v := range map[int]uint32{16: 1, 20: 208, 24: 8, 28: FlagReady | FlagRecords | FlagTLSG, 56: maxDepth, 60: maxStack, 64: recSize, 68: 64,
		72: 0, 76: 8, 80: 16, 84: 24, 88: 32, 92: 40,
		96: 0, 100: 8, 104: 16, 108: 24, 112: 32, 116: 40, 120: 44, 124: 48, 128: 52, 132: 56,
		136: 24, 140: 0, 144: 8, 148: 16, 152: 56 + 24*maxDepth, 156: 48, 160: 400, 164: 500} {
		le.PutUint32(b[off:], v)
	}
	le.PutUint64(b[168:], uint64(^uint64(7))) // -8
	return b
}

func record(h *Header, seq, goid, gopc, parent uint64, anc []Anc, stk []uint64) []byte {
	b := make([]byte, h.RecordSize)
	le := binary.LittleEndian
	le.PutUint64(b[h.OffRecSeq:], seq)
	le.PutUint64(b[h.OffRecGoid:], goid)
	le.PutUint64(b[h.OffRecStartPC:], 0x1000)
	le.PutUint64(b[h.OffRecGoPC:], gopc)
	le.PutUint64(b[h.OffRecParentGoid:], parent)
	le.PutUint32(b[h.OffRecNanc:], uint32(len(anc)))
	le.PutUint32(b[h.OffRecNstk:], uint32(len(stk)))
	le.PutUint32(b[h.OffRecDepth:], uint32(len(anc)))
	for i, a := range anc {
		e := b[h.OffRecAnc+uint32(i)*h.AncSize:]
		le.PutUint64(e[h.OffAncGoid:], a.Goid)
		le.PutUint64(e[h.OffAncStartPC:], a.StartPC)
		le.PutUint64(e[h.OffAncGoPC:], a.GoPC)
	}
	for i, pc := range stk {
		le.PutUint64(b[h.OffRecStack+8*uint32(i):], pc)
	}
	return b
}

func TestParseRecordChain(t *testing.T) {
	h, err := ParseHeader(v1Header(8, 4))
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
	c := Chain(r)
	if len(c) != 3 || c[0].Goid != 30 || c[0].ParentGoid != 20 || c[1].Goid != 20 || c[1].ParentGoid != 10 || c[2].Goid != 10 || c[2].ParentGoid != 1 || len(c[0].Stack) != 2 {
		t.Fatalf("chain %+v", c)
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
	h, _ := ParseHeader(v1Header(8, 0))
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
	good := v1Header(8, 0)
	for name, mut := range map[string]func([]byte){
		"magic":    func(b []byte) { b[3] = 'X' },
		"version":  func(b []byte) { binary.LittleEndian.PutUint32(b[16:], 2) },
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
	f.Add(v1Header(8, 0))
	f.Add(v1Header(64, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		if h.Version != 1 || h.HeaderSize < 208 {
			t.Fatalf("accepted %+v", h)
		}
		if h.checkDynamic() == nil {
			// Any record of record_size bytes must parse or fail cleanly.
			ParseRecord(h, make([]byte, h.RecordSize))
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	h, _ := ParseHeader(v1Header(8, 4))
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

func FuzzParseBpftrace(f *testing.F) {
	f.Add("L R 2 77 30 1000 2000 2 1 0 20\nL A 20 1100 2100\nL A 1 1200 2200\nL K 2000\nL E 2", 77)
	f.Add("L R 3 77 30 1000 2000 0 0 0 20\nL E 5", 77)
	f.Fuzz(func(t *testing.T, text string, tid int) {
		goid, chain, err := ParseBpftrace(strings.Split(text, "\n"), tid)
		if err != nil && (goid != 0 || chain != nil) {
			t.Fatalf("error with a result: %v", err)
		}
	})
}

func TestParseBpftrace(t *testing.T) {
	lines := strings.Split("L R 2 77 30 1000 2000 2 1 0 20\nL A 20 1100 2100\nL A 10 1200 2200\nL K 2000\nL E 2", "\n")
	goid, chain, err := ParseBpftrace(lines, 77)
	if err != nil || goid != 30 || len(chain) != 3 || chain[0].ParentGoid != 20 || chain[1].ParentGoid != 10 || len(chain[0].Stack) != 1 {
		t.Fatalf("%d %+v %v", goid, chain, err)
	}
	if _, _, err := ParseBpftrace(lines, 78); err == nil {
		t.Error("region of another thread accepted")
	}
	lines[len(lines)-1] = "L E 4"
	if _, _, err := ParseBpftrace(lines, 77); !errors.Is(err, ErrTorn) {
		t.Errorf("changed seq: %v, want ErrTorn", err)
	}
}
