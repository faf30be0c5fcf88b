package lineageabi

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestGoroutinesDamaged: in damaged memory the registry walk skips and
// counts what it cannot read instead of failing.
func TestGoroutinesDamaged(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		name                string
		damage              func(img []byte, h *Header)
		goroutines, skipped int
		blocks              int
	}{
		{"sudog unreadable", func(img []byte, _ *Header) { le.PutUint64(img[0x2000+96:], 0x10) }, 0, 1, 0},
		{"g unreadable", func(img []byte, _ *Header) { le.PutUint64(img[0x1000+64+8:], 0x10) }, 0, 1, 0},
		{"record implausible", func(img []byte, h *Header) { le.PutUint32(img[0x1000+64+h.OffRecNanc:], 0xffff) }, 0, 1, 0},
		{"block used beyond nrec", func(img []byte, _ *Header) { le.PutUint32(img[0x1000+12:], 9) }, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, img := registryImage()
			h, err := ParseHeader(img)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(img, h)
			v, err := loadImage(base, img)
			if err != nil {
				t.Fatal(err)
			}
			gs, _, err := v.Goroutines()
			if err != nil || len(gs) != tc.goroutines || v.Damage.Goroutines != tc.skipped || v.Damage.Blocks != tc.blocks {
				t.Errorf("%d goroutines, damage %+v, error %v; want %d goroutines, %d skipped, %d blocks", len(gs), v.Damage, err, tc.goroutines, tc.skipped, tc.blocks)
			}
			if tc.skipped+tc.blocks > 0 && v.Damage.First == nil {
				t.Error("no first error kept")
			}
		})
	}
}

// TestPlausible: impossible values are zeroed and marked, the ancestors
// from the first impossible one dropped, and a g with an impossible goid
// left out and counted.
func TestPlausible(t *testing.T) {
	text := []Range{{0x1000, 0x2000}}
	gs := []Goroutine{
		{Goid: 5, Record: &Record{Goid: 5, StartPC: 0x1100, GoPC: 0x1200, ParentGoid: 1, Anc: []Anc{{1, 0x1010, 0}}}},
		{Goid: 9295429630892703745, Record: &Record{Goid: 7, StartPC: 0x1100}},
		{Goid: 8, Status: StatusUnknown, Record: &Record{Goid: 8, StartPC: 0x10, GoPC: 0x1200, ParentGoid: 1 << 50,
			Anc: []Anc{{1 << 50, 0x1100, 0x1200}, {0, 0x1100, 0x7200}, {0, 0x1010, 0}}}},
	}
	p := NewPlausible(text, gs)
	if want := uint64(2*8 + 1<<20); p.MaxGoid != want {
		t.Errorf("MaxGoid %d, want %d (from the agreeing goids 5 and 8)", p.MaxGoid, want)
	}
	var d Damage
	out := p.Goroutines(gs, &d)
	if len(out) != 2 || out[0].Goid != 5 || out[1].Goid != 8 || d.Goroutines != 1 {
		t.Fatalf("kept %+v, damage %+v; want goroutines 5 and 8, 1 skipped", out, d)
	}
	if r := out[0].Record; r.Bad != 0 || len(r.Anc) != 1 {
		t.Errorf("goroutine 5 flagged: %+v", r)
	}
	r := out[1].Record
	if r.Bad != BadParent|BadStartPC|BadAnc || r.ParentGoid != 0 || r.StartPC != 0 || len(r.Anc) != 1 || r.GoPC != 0x1200 {
		t.Errorf("goroutine 8: %+v; want parent, start and the second ancestor on marked", r)
	}
	if got, want := r.Bad.Names(), []string{"parent", "start", "ancestors"}; !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if d.Flagged != 4 { // status, parent, start, ancestors
		t.Errorf("%d flagged, want 4", d.Flagged)
	}
	cgo := &Record{Goid: 9, Flags: RecCgoCallback} // no start or creation PC, no parent
	if n := p.CheckRecord(cgo); n != 0 {
		t.Errorf("a cgo callback's record is flagged: %v", cgo.Bad)
	}
	if n := p.CheckRecord(r); n != 0 {
		t.Errorf("a record checked again counts %d more", n)
	}
	if NewPlausible(nil, nil).MaxGoid != GoidCeiling {
		t.Error("without goroutines, MaxGoid is not the ceiling")
	}
}
