package lineageabi

import (
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// vecMem counts the vectored reads made of a memMap.
type vecMem struct {
	memMap
	calls int
}

func (m *vecMem) ReadV(bufs [][]byte, addrs []uint64, errs []error) {
	m.calls++
	for i := range bufs {
		errs[i] = m.ReadAt(bufs[i], addrs[i])
	}
}

// liveImage is registryImage with goroutine 5 not being scanned, read
// through a vecMem; g is its g struct in img.
func liveImage(t *testing.T) (v *View, mem *vecMem, g []byte) {
	base, img := registryImage()
	le := binary.LittleEndian
	le.PutUint32(img[0x2000+8:], 4) // waiting, scan bit clear
	mem = &vecMem{memMap: memMap{base: img}}
	h, err := ParseHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	v, err = (&ABI{Addr: base, Static: h}).Load(mem, 0)
	if err != nil {
		t.Fatal(err)
	}
	return v, mem, img[0x2000:0x2100]
}

func TestReadLive(t *testing.T) {
	v, mem, _ := liveImage(t)
	visits := 0
	gs, res, st, err := ReadLive(v, func() Visit[int] {
		return func(gs []*Goroutine) []int {
			visits++
			out := make([]int, len(gs))
			for i, g := range gs {
				out[i] = int(g.Goid) * 10
			}
			return out
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].Goid != 5 || gs[0].WaitReason != "chan receive" || len(gs[0].WaitChans) != 1 ||
		gs[0].WaitChans[0] != 0x9000 || gs[0].Record == nil || gs[0].Record.ParentGoid != 1 {
		t.Fatalf("goroutines %+v", gs)
	}
	if len(res) != 1 || res[0] != 50 || visits != 1 {
		t.Errorf("visit results %v after %d visits, want [50] after 1", res, visits)
	}
	if st.Goroutines != 1 || st.Retried != 0 || st.Torn != 0 {
		t.Errorf("stats %+v", st)
	}
	// One read per block, then 7 vectored reads for the batch: records,
	// g (T1), g, records, the wait list, g, records.
	if mem.calls != 7 || st.Calls != 8 {
		t.Errorf("%d vectored reads (stats: %d calls), want 7 (8)", mem.calls, st.Calls)
	}
}

// ReadLiveEach reads what ReadLive reads, handing each goroutine over as
// it comes; what keep copies of the reused record stays right.
func TestReadLiveEach(t *testing.T) {
	v, _, _ := liveImage(t)
	want, _, _, err := ReadLive[int](v, nil)
	if err != nil {
		t.Fatal(err)
	}
	sized := -1
	var got []Goroutine
	var recs []*Record
	st, err := ReadLiveEach(v, func() Visit[int] {
		return func(gs []*Goroutine) []int { return make([]int, len(gs)) }
	}, func(n int) { sized = n }, func(g *Goroutine, _ int) {
		rec := *g.Record
		rec.Anc, rec.Stack = slices.Clone(rec.Anc), slices.Clone(rec.Stack)
		got, recs = append(got, *g), append(recs, &rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The image has two records, one of them free.
	if sized != 2 || st.Goroutines != 1 || len(got) != 1 {
		t.Fatalf("sized %d, %d goroutines kept (stats %+v), want 2 and 1", sized, len(got), st)
	}
	for i := range got {
		got[i].Record = recs[i]
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadLiveEach kept\n%+v\nReadLive read\n%+v", got, want)
	}
}

// TestReadLiveRetries: a goroutine that changes while its stack is read
// (a status change, or its stack moved by the GC without one) is read
// again, and its first reading dropped; one that keeps changing is
// counted as torn.
func TestReadLiveRetries(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		name    string
		changes int // visits that change the goroutine
		change  func(g []byte)
		retries int // reads again
		torn    bool
	}{
		{"transition", 1, func(g []byte) { le.PutUint32(g[12:], le.Uint32(g[12:])+2) }, 1, false},
		{"stack moved", 2, func(g []byte) { le.PutUint64(g[80:], le.Uint64(g[80:])+0x1000) }, 2, false},
		// Seen by the re-read, then by the next first read: the GC may
		// be moving the stack.
		{"scan bit", 1, func(g []byte) { le.PutUint32(g[8:], 4|0x1000) }, 2, false},
		{"always", 1 << 10, func(g []byte) { le.PutUint32(g[12:], le.Uint32(g[12:])+1) }, LiveRetries, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, g := liveImage(t)
			visits := 0
			gs, res, st, err := ReadLive(v, func() Visit[int] {
				return func(gs []*Goroutine) []int {
					visits++
					if visits <= tc.changes {
						tc.change(g)
					} else {
						le.PutUint32(g[8:], 4) // the GC is done with it
					}
					return make([]int, len(gs))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.torn {
				if len(gs) != 0 || st.Torn != 1 || st.Retried != tc.retries {
					t.Errorf("%d goroutines, stats %+v; want none, 1 torn after %d retries", len(gs), st, LiveRetries)
				}
				return
			}
			if len(gs) != 1 || len(res) != 1 || st.Retried != tc.retries || st.Torn != 0 || visits != tc.retries+1 {
				t.Errorf("%d goroutines, %d visits, stats %+v; want 1, %d visits, %d retried",
					len(gs), visits, st, tc.retries+1, tc.retries)
			}
		})
	}
}

// TestCache: a goroutine that has not run since the last read is not
// visited again, even if the GC moved its stack (its frames are the same);
// one that ran is, once: the read after it finds it unchanged again. What
// tells is the record's change count.
func TestCache(t *testing.T) {
	v, mem, g := liveImage(t)
	le := binary.LittleEndian
	var c Cache[int]
	visits := 0
	visit := func(gs []*Goroutine) []int {
		visits++
		return make([]int, len(gs))
	}
	for i, want := range []int{1, 1, 1, 2, 2, 3} {
		switch i {
		case 2:
			le.PutUint64(g[80:], le.Uint64(g[80:])+0x1000) // the stack moved
		case 3:
			setCounts(mem.memMap[0x10000], 0, 7) // a park and a wake
		case 5:
			// The record's count alone: the cache goes by it.
			le.PutUint32(mem.memMap[0x10000][0x1000+64+40:], 9)
		}
		gs, _, st, err := c.Read(v, func() Visit[int] { return visit })
		if err != nil || len(gs) != 1 || gs[0].Goid != 5 || st.Torn != 0 {
			t.Fatalf("read %d: %v, %d goroutines, %+v", i, err, len(gs), st)
		}
		if visits != want {
			t.Errorf("read %d: %d visits, want %d", i, visits, want)
		}
	}
}

// TestCacheNotParked: the change count moves only when a goroutine starts
// to run (for a runnable one, possibly just before the read saw it
// runnable), so a goroutine read while runnable, running or in a syscall
// (it can run, park, or leave the syscall, without a new count) is read
// again at every read, count unchanged or not; one read parked is not.
func TestCacheNotParked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status uint32 // runtime status (registryImage's map is the identity but for 6)
		visits []int
	}{
		{"runnable", 1, []int{1, 2, 3}},
		{"running", 2, []int{1, 2, 3}},
		{"syscall", 3, []int{1, 2, 3}},
		{"waiting", 4, []int{1, 1, 1}},
		{"preempted", 7, []int{1, 2, 3}}, // status code 7 in the identity map
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, g := liveImage(t)
			le := binary.LittleEndian
			le.PutUint32(g[8:], tc.status)
			var c Cache[int]
			visits := 0
			visit := func(gs []*Goroutine) []int {
				visits++
				return make([]int, len(gs))
			}
			for i, want := range tc.visits {
				gs, _, st, err := c.Read(v, func() Visit[int] { return visit })
				if err != nil || len(gs) != 1 || gs[0].Goid != 5 || st.Torn != 0 {
					t.Fatalf("read %d: %v, %d goroutines, %+v", i, err, len(gs), st)
				}
				if visits != want {
					t.Errorf("read %d: %d visits, want %d", i, visits, want)
				}
			}
			// Parked now, with the same count (a runtime that bumps it
			// only when a goroutine starts running): a goroutine that
			// was not kept is read once more, and then kept.
			le.PutUint32(g[8:], 4)
			want := visits
			if tc.visits[2] != 1 {
				want++
			}
			for i := range 2 {
				if _, _, _, err := c.Read(v, func() Visit[int] { return visit }); err != nil {
					t.Fatal(err)
				}
				if visits != want {
					t.Errorf("parked read %d: %d visits, want %d", i, visits, want)
				}
			}
		})
	}
}

// TestCacheNoChangeCount: from a runtime that publishes no change count
// in its records (off_rec_changes 0), the cache goes by the g's
// transition count.
func TestCacheNoChangeCount(t *testing.T) {
	base, img := registryImage()
	le := binary.LittleEndian
	le.PutUint32(img[OffRecChanges:], 0)
	le.PutUint32(img[0x2000+8:], 4) // waiting, scan bit clear
	h, err := ParseHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	v, err := (&ABI{Addr: base, Static: h}).Load(&vecMem{memMap: memMap{base: img}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var c Cache[int]
	visits := 0
	visit := func(gs []*Goroutine) []int {
		visits++
		return make([]int, len(gs))
	}
	for i, want := range []int{1, 1, 2} {
		if i == 2 {
			le.PutUint32(img[0x2000+12:], 7) // the g's count alone
		}
		if gs, _, _, err := c.Read(v, func() Visit[int] { return visit }); err != nil || len(gs) != 1 {
			t.Fatalf("read %d: %v, %d goroutines", i, err, len(gs))
		}
		if visits != want {
			t.Errorf("read %d: %d visits, want %d", i, visits, want)
		}
	}
}

// TestCacheBlocks: a block that was not full is read again (its new
// records are found); a full one is not (its records are final).
func TestCacheBlocks(t *testing.T) {
	v, mem, _ := liveImage(t)
	img := mem.memMap[0x10000]
	le := binary.LittleEndian
	const block, g3 = 0x1000, 0x2200
	le.PutUint32(img[block+8:], 3) // room for 3 records, 2 used
	var c Cache[int]
	read := func() []uint64 {
		t.Helper()
		goids, _ := cacheRead(t, &c, v)
		return goids
	}
	if got := read(); !slices.Equal(got, []uint64{5}) {
		t.Fatalf("first read: goroutines %v, want [5]", got)
	}
	// A third record, for goroutine 7, fills the block.
	rec := record(v.H, 2, 7, 0x2000, 1, []Anc{{1, 0x1000, 0}}, nil)
	le.PutUint64(rec[v.H.OffRecG:], 0x10000+g3)
	copy(img[block+64+2*int(v.H.RecordSize):], rec)
	le.PutUint64(img[g3:], 7)
	le.PutUint32(img[g3+8:], 4) // waiting
	img[g3+16] = 1              // chan receive
	le.PutUint32(img[block+12:], 3)
	if got := read(); !slices.Equal(got, []uint64{5, 7}) {
		t.Fatalf("after the block grew: goroutines %v, want [5 7]", got)
	}
	// The block is full: its header is not read again.
	le.PutUint32(img[block+12:], 99)
	if got := read(); !slices.Equal(got, []uint64{5, 7}) {
		t.Fatalf("after the block filled: goroutines %v, want [5 7]", got)
	}
}

// TestCacheFree: a record whose g is free is not read again while the g's
// transition count stays the same; once the g is reused, its goroutine is
// read.
func TestCacheFree(t *testing.T) {
	v, mem, _ := liveImage(t)
	img := mem.memMap[0x10000]
	var c Cache[int]
	var calls []int
	for i, want := range [][]uint64{{5}, {5}, {5, 6}} {
		if i == 2 {
			reuseFreeG(img)
		}
		goids, st := cacheRead(t, &c, v)
		if !slices.Equal(goids, want) {
			t.Fatalf("read %d: goroutines %v, want %v", i, goids, want)
		}
		calls = append(calls, st.Calls)
	}
	// The second read: the open block's header and the known gs' counts.
	if calls[1] != 2 || calls[0] <= calls[1] || calls[2] <= calls[1] {
		t.Errorf("read calls %v: want 2 for the second read, more for the first and third", calls)
	}
}

// reuseFreeG makes the dead g of liveImage's goroutine 6 a goroutine
// waiting in a channel receive, with a status change.
func reuseFreeG(img []byte) {
	const g2 = 0x2100
	le := binary.LittleEndian
	le.PutUint32(img[g2+8:], 4) // waiting
	img[g2+16] = 1              // chan receive
	setCounts(img, 1, le.Uint32(img[g2+12:])+1)
}

// setCounts sets the transition count of the g of liveImage's record i
// (0: goroutine 5, 1: goroutine 6) and its record's change count, as a
// status change does.
func setCounts(img []byte, i int, n uint32) {
	le := binary.LittleEndian
	le.PutUint32(img[0x2000+0x100*i+12:], n)
	le.PutUint32(img[0x1000+64+88*i+40:], n)
}

// cacheRead reads v through c and returns the goids it found, sorted.
func cacheRead(t *testing.T, c *Cache[int], v *View) ([]uint64, LiveStats) {
	t.Helper()
	gs, _, st, err := c.Read(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	var goids []uint64
	for _, g := range gs {
		goids = append(goids, g.Goid)
	}
	slices.Sort(goids)
	return goids, st
}

// TestCacheChanges: Changes returns what left and joined the set of
// results since the last read: nothing for a population that did not
// change, the old and the new result of a goroutine that ran, the result
// of a free g that became a goroutine, and that of a goroutine that ended.
func TestCacheChanges(t *testing.T) {
	v, mem, g := liveImage(t)
	img := mem.memMap[0x10000]
	le := binary.LittleEndian
	var c Cache[int]
	n := 0
	visit := func() Visit[int] {
		return func(gs []*Goroutine) []int {
			out := make([]int, len(gs))
			for i, g := range gs {
				n++
				out[i] = int(g.Goid)*100 + n
			}
			return out
		}
	}
	for i, step := range []struct {
		change      func()
		gone, added []int
	}{
		{func() {}, nil, []int{501}},
		{func() {}, nil, nil},
		{func() { setCounts(img, 0, 7) }, []int{501}, []int{502}}, // a park and a wake
		{func() { reuseFreeG(img) }, nil, []int{603}},
		{func() { le.PutUint32(g[8:], 6); setCounts(img, 0, 8) }, []int{502}, nil}, // dead
		{func() {}, nil, nil},
	} {
		step.change()
		gone, added, st, err := c.Changes(v, visit)
		if err != nil || st.Torn != 0 {
			t.Fatalf("read %d: %v, %+v", i, err, st)
		}
		if !slices.Equal(gone, step.gone) || !slices.Equal(added, step.added) {
			t.Errorf("read %d: gone %v, added %v; want %v, %v", i, gone, added, step.gone, step.added)
		}
	}
	// Read returns the set Changes kept.
	gs, res, _, err := c.Read(v, visit)
	if err != nil || len(gs) != 1 || gs[0].Goid != 6 || !slices.Equal(res, []int{603}) {
		t.Errorf("Read after Changes: %v, %d goroutines, results %v; want goroutine 6, [603]", err, len(gs), res)
	}
}

// TestLoadHeader: the header of a process whose runtime has not
// initialized it is ErrNotReady; once ready, LoadHeader returns what Load
// reads, without the registry.
func TestLoadHeader(t *testing.T) {
	base, img := registryImage()
	h, err := ParseHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	a := &ABI{Addr: base, Static: h}
	got, err := a.LoadHeader(memMap{base: img}, 0)
	if err != nil || got.RecordSize != h.RecordSize || got.Flags != h.Flags {
		t.Fatalf("LoadHeader = %+v, %v", got, err)
	}
	starting := slices.Clone(img)
	binary.LittleEndian.PutUint32(starting[OffFlags:], 0)
	if _, err := a.LoadHeader(memMap{base: starting}, 0); !errors.Is(err, ErrNotReady) {
		t.Errorf("LoadHeader of a header not ready: %v, want ErrNotReady", err)
	}
	if _, err := a.Load(memMap{base: starting}, 0); !errors.Is(err, ErrNotReady) {
		t.Errorf("Load of a header not ready: %v, want ErrNotReady", err)
	}
}
