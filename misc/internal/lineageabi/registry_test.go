package lineageabi

import (
	"encoding/binary"
	"testing"
)

// registryImage builds a process image with a header that publishes the
// registry (doc/lineage-abi.md, section 13) and one block of two records:
// goroutine 5, waiting in a channel receive, and a dead g.
func registryImage() (base uint64, img []byte) {
	const (
		hdr    = 0x0
		block  = 0x1000
		g1, g2 = 0x2000, 0x2100
		sudog  = 0x3000
		strs   = 0x4000
	)
	img = make([]byte, 0x4200)
	le := binary.LittleEndian
	h := v1Header(2, 1) // record_size 112; its last 8 bytes hold g
	copy(img[hdr:], h)
	base = 0x10000
	le.PutUint32(img[hdr+20:], RegistryHeaderSize)
	le.PutUint32(img[hdr+28:], FlagReady|FlagRecords|FlagRegistry)
	le.PutUint64(img[hdr+32:], base+hdr)
	r := img[hdr+OffRegistry:]
	le.PutUint64(r[0:], base+block)
	le.PutUint64(r[8:], 1)
	for i, v := range []uint32{64, 0, 8, 12, 104, // block header, its fields, off_rec_g
		0, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, // g fields
		0, 8, 16, 24, 0x1000} { // sudog fields, status_scan
		le.PutUint32(r[16+4*i:], v)
	}
	for i := range 16 {
		r[112+i] = byte(i)
	}
	r[112+6] = StatusDead
	le.PutUint64(r[128:], base+strs)
	le.PutUint32(r[136:], 2)
	le.PutUint32(r[140:], 16)

	le.PutUint32(img[block+8:], 4) // nrec
	le.PutUint32(img[block+12:], 2)
	hd, _ := ParseHeader(img[hdr:])
	for i, g := range []uint64{g1, g2} {
		rec := record(hd, 2, uint64(5+i), 0x2000, 1, []Anc{{1, 0x1000, 0}}, nil)
		le.PutUint64(rec[104:], base+g)
		copy(img[block+64+i*112:], rec)
	}
	le.PutUint64(img[g1:], 5)
	le.PutUint32(img[g1+8:], 4|0x1000) // waiting, being scanned
	img[g1+16] = 1
	le.PutUint64(img[g1+96:], base+sudog)
	le.PutUint64(img[sudog+16:], 0x9000)
	le.PutUint64(img[g2:], 6)
	le.PutUint32(img[g2+8:], 6) // dead
	le.PutUint64(img[strs+16:], base+strs+0x100)
	le.PutUint64(img[strs+24:], 12)
	copy(img[strs+0x100:], "chan receive")
	return base, img
}

func loadImage(base uint64, img []byte) (*View, error) {
	h, err := ParseHeader(img)
	if err != nil {
		return nil, err
	}
	return (&ABI{Addr: base, Static: h}).Load(memMap{base: img}, 0)
}

func TestGoroutines(t *testing.T) {
	v, err := loadImage(registryImage())
	if err != nil {
		t.Fatal(err)
	}
	gs, torn, err := v.Goroutines()
	if err != nil || torn != 0 {
		t.Fatalf("Goroutines: %v, %d torn", err, torn)
	}
	if len(gs) != 1 {
		t.Fatalf("%d goroutines, want 1 (the dead g is left out): %+v", len(gs), gs)
	}
	g := gs[0]
	if g.Goid != 5 || g.Status != StatusWaiting || !g.Scanning || g.WaitReason != "chan receive" ||
		len(g.WaitChans) != 1 || g.WaitChans[0] != 0x9000 || g.Record.ParentGoid != 1 {
		t.Errorf("goroutine %+v", g)
	}
}

func TestNoRegistry(t *testing.T) {
	base, img := registryImage()
	binary.LittleEndian.PutUint32(img[28:], FlagReady|FlagRecords) // flag clear
	v, err := loadImage(base, img)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Goroutines(); err != ErrNoRegistry {
		t.Errorf("err %v, want ErrNoRegistry", err)
	}
}

// FuzzGoroutines: no image makes the registry walk panic, loop or read
// beyond what it bounds.
func FuzzGoroutines(f *testing.F) {
	_, img := registryImage()
	f.Add(img)
	f.Fuzz(func(t *testing.T, img []byte) {
		v, err := loadImage(0x10000, img)
		if err != nil {
			return
		}
		gs, _, _ := v.Goroutines()
		for _, g := range gs {
			if g.Status == StatusDead || g.Status == StatusIdle {
				t.Fatalf("free g returned: %+v", g)
			}
		}
	})
}
