package ebpf

import (
	"encoding/binary"
	"testing"

	"fpsafe.dev/misc/internal/lineageabi"
)

// TestEventLineage: only a record copied whole is stitched: the
// region is the sampled thread's, and the seq is even and the same before
// the copy, in it and after it.
func TestEventLineage(t *testing.T) {
	h := &lineageabi.Header{MaxDepth: 2, RecordSize: 128, OffRecSeq: 0, OffRecG: 8, OffRecGoid: 16, OffRecParentGoid: 24,
		OffRecNanc: 32, OffRecNstk: 34, OffRecFlags: 36, OffRecDepth: 40, OffRecSite: 56, OffRecAnc: 64, AncSize: 8,
		OffAncStart: 0, OffAncGoPC: 4, OffRecStack: 80, TextBase: 0x400000}
	rec := make([]byte, 128)
	le := binary.LittleEndian
	le.PutUint64(rec[0:], 4)       // seq
	le.PutUint64(rec[16:], 9)      // goid
	le.PutUint64(rec[24:], 7)      // parent
	le.PutUint16(rec[32:], 1)      // nanc
	le.PutUint32(rec[40:], 5)      // depth
	le.PutUint32(rec[60:], 0x1234) // gopc, from text_base
	le.PutUint32(rec[68:], 0x5678) // anc[0].gopc
	good := Event{TID: 3, Flags: FlagLineage | FlagRegionOK | FlagRecord, RegionTID: 3, Cur: 0x1000, Seq1: 4, Seq2: 4, Record: rec}
	goid, chain, err := good.Lineage(h, int(good.TID))
	if err != nil || goid != 9 || len(chain) != 2 || chain[0].GoPC != 0x401234 || chain[1].Goid != 7 || chain[1].GoPC != 0x405678 {
		t.Fatalf("Lineage = %d, %+v, %v", goid, chain, err)
	}
	// In a PID namespace of its own the thread is 1 to its runtime, 3 to
	// the kernel's sample.
	inNS := good
	inNS.RegionTID = 1
	if goid, _, err := inNS.Lineage(h, 1); err != nil || goid != 9 {
		t.Errorf("thread 3, 1 in its namespace: %d, %v", goid, err)
	}
	// The tail past the one ancestor was not read: a page never touched.
	short := good
	short.Record = rec[:72]
	if goid, chain, err := short.Lineage(h, int(short.TID)); err != nil || goid != 9 || len(chain) != 2 {
		t.Errorf("record read up to its last ancestor: %d, %+v, %v", goid, chain, err)
	}
	idle := good
	idle.Cur = 0
	if goid, chain, err := idle.Lineage(h, int(idle.TID)); goid != 0 || chain != nil || err != nil {
		t.Errorf("thread running no goroutine: %d, %v, %v", goid, chain, err)
	}
	for name, bad := range map[string]func(e *Event){
		"seq changed":       func(e *Event) { e.Seq2 = 6 },
		"seq odd":           func(e *Event) { e.Seq1, e.Seq2 = 5, 5 },
		"region unstable":   func(e *Event) { e.Flags &^= FlagRegionOK },
		"record not copied": func(e *Event) { e.Flags &^= FlagRecord },
		"another thread":    func(e *Event) { e.RegionTID = 4 },
		"record's seq":      func(e *Event) { e.Seq1, e.Seq2 = 2, 2 },
		"ancestor not read": func(e *Event) { e.Record = e.Record[:68] },
		"seq not read":      func(e *Event) { e.Record = e.Record[:4] },
	} {
		e := good
		bad(&e)
		if _, _, err := e.Lineage(h, int(e.TID)); err == nil {
			t.Errorf("%s: stitched", name)
		}
	}
}
