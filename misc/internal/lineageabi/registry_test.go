package lineageabi

import (
	"encoding/binary"
	"slices"
	"strings"
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
	h := v2Header(2, 1) // record_size 88
	copy(img[hdr:], h)
	base = 0x10000
	le.PutUint32(img[hdr+28:], FlagReady|FlagRecords|FlagRegistry)
	le.PutUint64(img[hdr+OffSelf:], base+hdr)
	le.PutUint64(img[hdr+OffBlocks:], base+block)
	le.PutUint64(img[hdr+OffNBlocks:], 1)
	le.PutUint64(img[hdr+OffWaitReason:], base+strs)
	img[hdr+OffStatusMap+6] = StatusDead

	le.PutUint32(img[block+8:], 4) // nrec
	le.PutUint32(img[block+12:], 2)
	hd, _ := ParseHeader(img[hdr:])
	for i, g := range []uint64{g1, g2} {
		rec := record(hd, 2, uint64(5+i), 0x2000, 1, []Anc{{1, 0x1000, 0}}, nil)
		le.PutUint64(rec[hd.OffRecG:], base+g)
		copy(img[block+64+i*int(hd.RecordSize):], rec)
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

// FuzzGoroutines: no image makes the registry walk (with the labels)
// panic, loop or read beyond what it bounds.
func FuzzGoroutines(f *testing.F) {
	_, img := registryImage()
	f.Add(img)
	f.Fuzz(func(t *testing.T, img []byte) {
		v, err := loadImage(0x10000, img)
		if err != nil {
			return
		}
		v.ReadLabels = true
		gs, _, _ := v.Goroutines()
		for _, g := range gs {
			if g.Status == StatusDead || g.Status == StatusIdle {
				t.Fatalf("free g returned: %+v", g)
			}
		}
		for _, tid := range v.Threads() {
			if _, g, _ := v.ThreadGoroutine(tid); g != nil && g.Goid != g.Record.Goid {
				t.Fatalf("thread %d: goroutine %d with the record of %d", tid, g.Goid, g.Record.Goid)
			}
		}
	})
}

// sudogImage is registryImage with both goroutines waiting on the sudogs
// of a region at sudogBase: goroutine 5 on sudog first, goroutine 6 on
// sudog second. Sudog i is at sudogBase+32*i; its fields (waitlink, elem,
// c, isselect) are set by set.
func sudogImage(first, second int, set func(s []byte, i int)) memMap {
	const sudogBase, n = 0x100000, 4096
	base, img := registryImage()
	le := binary.LittleEndian
	le.PutUint32(img[0x2000+8:], 4) // waiting, scan bit clear
	le.PutUint32(img[0x2100+8:], 4)
	img[0x2100+16] = 1
	le.PutUint64(img[0x2000+96:], sudogBase+32*uint64(first))
	le.PutUint64(img[0x2100+96:], sudogBase+32*uint64(second))
	sudogs := make([]byte, 32*n)
	for i := range n {
		set(sudogs[32*i:32*i+32], i)
	}
	return memMap{base: img, sudogBase: sudogs}
}

// TestWaitObject: a semaphore waiter names its own elem, however many
// goroutines wait at that address after it (their sudogs chained by
// waitlink), and every one of them the same; a channel operation names its
// channel and its waitlink is not followed; a select names all its cases;
// a select list longer than one can be is an error (a torn goroutine,
// live).
func TestWaitObject(t *testing.T) {
	le := binary.LittleEndian
	const sudogBase = 0x100000
	link := func(s []byte, i int) { le.PutUint64(s[0:], sudogBase+32*uint64(i+1)) }
	for _, tc := range []struct {
		name          string
		first, second int
		set           func(s []byte, i int)
		chans5        []uint64 // goroutine 5's channels
		addr5, addr6  uint64
		sudogs        int // read live
		err           bool
	}{
		{"semaphore pile-up", 0, 1, func(s []byte, i int) {
			if i < 3000 {
				link(s, i)
			}
			le.PutUint64(s[8:], 0x7000)
		}, nil, 0x7000, 0x7000, 2, false},
		{"channel", 0, 1, func(s []byte, i int) {
			le.PutUint64(s[0:], 0xdead0000) // stale: not followed
			le.PutUint64(s[16:], 0x9000+uint64(i))
		}, []uint64{0x9000}, 0, 0, 2, false},
		{"select", 10, 20, func(s []byte, i int) {
			if i%10 != 9 {
				link(s, i)
			}
			le.PutUint64(s[16:], 0x9000+uint64(i))
			s[24] = 1
		}, []uint64{0x900a, 0x900b, 0x900c, 0x900d, 0x900e, 0x900f, 0x9010, 0x9011, 0x9012, 0x9013}, 0, 0, 20, false},
		{"select too long", 0, 4090, func(s []byte, i int) {
			if i < 4095 {
				link(s, i)
			}
			le.PutUint64(s[16:], 0x9000+uint64(i))
			s[24] = 1
		}, nil, 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := sudogImage(tc.first, tc.second, tc.set)
			v, err := loadImage(0x10000, mem[0x10000])
			if err != nil {
				t.Fatal(err)
			}
			v = v.WithMem(mem)
			gs, _, err := v.Goroutines()
			if tc.err {
				// The stopped reader skips the goroutine and counts it.
				if err != nil || len(gs) != 1 || gs[0].Goid != 6 || v.Damage.Goroutines != 1 ||
					v.Damage.First == nil || !strings.Contains(v.Damage.First.Error(), "more than 1024 cases") {
					t.Errorf("Goroutines: %v, %d goroutines, damage %+v; want goroutine 6, goroutine 5 skipped for its select of 4095 cases", err, len(gs), v.Damage)
				}
				vm := &vecMem{memMap: mem}
				gs, _, st, err := ReadLive(v.WithMem(vm), func() Visit[int] { return nil })
				if err != nil || st.Torn != 1 || len(gs) != 1 || gs[0].Goid != 6 {
					t.Errorf("ReadLive: %v, %d goroutines, stats %+v; want goroutine 6 and goroutine 5 torn", err, len(gs), st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check := func(who string, gs []Goroutine) {
				t.Helper()
				if len(gs) != 2 {
					t.Fatalf("%s: %d goroutines, want 2", who, len(gs))
				}
				slices.SortFunc(gs, func(a, b Goroutine) int { return int(a.Goid) - int(b.Goid) })
				g5, g6 := gs[0], gs[1]
				if !slices.Equal(g5.WaitChans, tc.chans5) || g5.Select != (len(tc.chans5) > 1) || g5.WaitAddr != tc.addr5 || g6.WaitAddr != tc.addr6 {
					t.Errorf("%s: goroutine 5 waits on chans %#x (select %v) addr %#x, goroutine 6 on %#x; want chans %#x, addrs %#x and %#x",
						who, g5.WaitChans, g5.Select, g5.WaitAddr, g6.WaitAddr, tc.chans5, tc.addr5, tc.addr6)
				}
			}
			check("Goroutines", gs)
			vm := &vecMem{memMap: mem}
			gs, _, st, err := ReadLive(v.WithMem(vm), func() Visit[int] { return nil })
			if err != nil {
				t.Fatal(err)
			}
			check("ReadLive", gs)
			if st.Sudogs != tc.sudogs {
				t.Errorf("ReadLive read %d sudogs, want %d", st.Sudogs, tc.sudogs)
			}
		})
	}
}

// TestThreadGoroutine: a thread's region names goroutine 5's record; its
// g is read with it (waiting on a channel). A g that runs another
// goroutine now (its goid is not the record's) is not returned.
func TestThreadGoroutine(t *testing.T) {
	base, img := registryImage()
	le := binary.LittleEndian
	const region = 0x3800
	h, err := ParseHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	le.PutUint64(img[OffRegions:], base+region)
	le.PutUint64(img[OffNRegions:], 1)
	le.PutUint64(img[region+h.OffRegionTid:], 77)
	le.PutUint32(img[region+h.OffRegionState:], 1)
	le.PutUint64(img[region+h.OffRegionCur:], base+0x1000+64)
	v, err := loadImage(base, img)
	if err != nil {
		t.Fatal(err)
	}
	rec, g, err := v.ThreadGoroutine(77)
	if err != nil || rec == nil || g == nil {
		t.Fatalf("ThreadGoroutine: %v, record %v, g %v", err, rec, g)
	}
	if rec.Goid != 5 || g.Goid != 5 || g.Status != StatusWaiting || g.WaitReason != "chan receive" ||
		!slices.Equal(g.WaitChans, []uint64{0x9000}) || g.Record != rec || g.RecordAddr != base+0x1000+64 {
		t.Errorf("record %+v, goroutine %+v", rec, g)
	}
	le.PutUint64(img[0x2000:], 9) // the g runs goroutine 9 now
	if rec, g, err := v.ThreadGoroutine(77); err != nil || rec == nil || g != nil {
		t.Errorf("g reused: %v, record %v, goroutine %+v; want the record alone", err, rec, g)
	}
}

// TestLabels: a goroutine's pprof labels are read through g.labels, the
// label set's slice and each label's strings, by Goroutines and ReadLive,
// only when asked for.
func TestLabels(t *testing.T) {
	base, img := registryImage()
	le := binary.LittleEndian
	const set, list, strs = 0x4100, 0x4140, 0x41c0 // label set, its 2 labels, their strings
	le.PutUint32(img[0x2000+8:], 4)                // waiting, scan bit clear (for ReadLive)
	le.PutUint64(img[0x2000+104:], base+set)       // g.labels
	le.PutUint64(img[set:], base+list)
	le.PutUint64(img[set+8:], 2)
	for i, s := range []string{"worker", "7", "k", ""} {
		le.PutUint64(img[list+16*i:], base+strs+uint64(8*i))
		le.PutUint64(img[list+16*i+8:], uint64(len(s)))
		copy(img[strs+8*i:], s)
	}
	want := []Label{{"worker", "7"}, {"k", ""}}
	for _, read := range []bool{false, true} {
		v, err := loadImage(base, img)
		if err != nil {
			t.Fatal(err)
		}
		v.ReadLabels = read
		gs, _, err := v.Goroutines()
		if err != nil || len(gs) != 1 {
			t.Fatalf("Goroutines: %v, %d goroutines", err, len(gs))
		}
		live, _, _, err := ReadLive[int](v, nil)
		if err != nil || len(live) != 1 {
			t.Fatalf("ReadLive: %v, %d goroutines", err, len(live))
		}
		for _, got := range [][]Label{gs[0].Labels, live[0].Labels} {
			if read && !slices.Equal(got, want) || !read && got != nil {
				t.Errorf("ReadLabels %v: labels %q", read, got)
			}
		}
	}
	// A corrupt count is an error, not a huge read.
	le.PutUint64(img[set+8:], 1<<40)
	v, _ := loadImage(base, img)
	v.ReadLabels = true
	if gs, _, _ := v.Goroutines(); len(gs) != 0 || v.Damage.Goroutines != 1 {
		t.Errorf("corrupt label count: %d goroutines, damage %+v", len(gs), v.Damage)
	}
}
