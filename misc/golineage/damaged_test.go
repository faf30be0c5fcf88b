package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

// Damaged cores (issue 24 item 3): a core cut short or corrupt lists what
// it still holds and ends with one line that counts what was skipped.

// coreMap is a whole core read in process, to find where in the file each
// goroutine's data lies, so that tests can cut or corrupt it there.
type coreMap struct {
	core *target.Core
	view *lineageabi.View
	gs   map[uint64]*lineageabi.Goroutine
}

func openCoreMap(t *testing.T, core, exe string) *coreMap {
	t.Helper()
	snap, closer, err := openCore(core, exe, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closer)
	view, err := loadView(snap)
	if err != nil {
		t.Fatal(err)
	}
	gs, _, err := view.Goroutines()
	if err != nil || view.Damage.Damaged() {
		t.Fatalf("whole core: %v, damage %+v", err, view.Damage)
	}
	// The core file itself, to map addresses to file offsets.
	c, err := target.OpenCore(core, snap.bin.ELF.Machine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := &coreMap{core: c, view: view, gs: map[uint64]*lineageabi.Goroutine{}}
	for i := range gs {
		m.gs[gs[i].Goid] = &gs[i]
	}
	return m
}

func (m *coreMap) word(t *testing.T, addr uint64) uint64 {
	t.Helper()
	w, err := target.Word(m.core, addr)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// footprint is the end of the last byte of the core file that ps -json
// -stacks reads for goroutine g: the header, the registry blocks up to
// g's, its record, g, sudogs, wait reason and stack.
func (m *coreMap) footprint(t *testing.T, g *lineageabi.Goroutine) int64 {
	t.Helper()
	r, h := m.view.Reg, m.view.H
	var end int64
	need := func(addr, n uint64) {
		for _, a := range []uint64{addr, addr + n - 1} {
			if off, ok := m.core.FileOffset(a); ok {
				end = max(end, off+1)
			}
		}
	}
	need(m.view.Addr, lineageabi.HeaderSize)
	for b := m.word(t, m.view.Addr+lineageabi.OffBlocks); b != 0; b = m.word(t, b+uint64(r.OffBlockNext)) {
		need(b, uint64(r.BlockHeaderSize))
		if g.RecordAddr > b && g.RecordAddr < b+uint64(r.BlockHeaderSize)+(1<<16)*uint64(h.RecordSize) {
			break
		}
	}
	need(g.RecordAddr, uint64(h.RecordSize))
	gSpan := uint32(0)
	for _, off := range []uint32{r.OffGGoid, r.OffGStatus, r.OffGTransitions, r.OffGWaitReason, r.OffGWaitSince,
		r.OffGSchedSP, r.OffGSchedPC, r.OffGSchedBP, r.OffGSyscallSP, r.OffGSyscallPC, r.OffGSyscallBP,
		r.OffGStackLo, r.OffGStackHi, r.OffGWaiting, r.OffGLabels} {
		gSpan = max(gSpan, off+8)
	}
	need(g.G, uint64(gSpan))
	sudogSpan := max(r.OffSudogWaitlink, r.OffSudogElem, r.OffSudogC, r.OffSudogIsSelect) + 8
	for s := m.word(t, g.G+uint64(r.OffGWaiting)); s != 0; s = m.word(t, s+uint64(r.OffSudogWaitlink)) {
		need(s, uint64(sudogSpan))
	}
	if g.Status == lineageabi.StatusWaiting {
		var i [1]byte
		m.core.ReadAt(i[:], g.G+uint64(r.OffGWaitReason))
		e := r.WaitReasons + uint64(i[0])*uint64(r.StringSize)
		need(e, uint64(r.StringSize))
		if n := m.word(t, e+8); n > 0 {
			need(m.word(t, e), n)
		}
	}
	if regs, ok := savedRegs(*g); ok && regs.SP < g.StackHi {
		need(regs.SP, g.StackHi-regs.SP)
	}
	return end
}

// psJSON runs ps -json -stacks on a core and returns each goroutine's line
// by goid, its standard error and exit status.
func psJSON(t *testing.T, core, exe string) (map[uint64]string, string, int) {
	t.Helper()
	out, stderr, code := tool(t, "ps", "-json", "-stacks", "--core", core, exe)
	lines := map[uint64]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var g struct{ Goid uint64 }
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("ps -json: %v in line %q", err, l)
		}
		lines[g.Goid] = l
	}
	return lines, stderr, code
}

var reCutSummary = regexp.MustCompile(`^golineage: \S+: core truncated at (\d+) of (\d+) bytes: skipped \d+ goroutines?, (\d+ registry blocks?, )?\d+ regions?, \d+ notes?, \d+ segments?( \(first: [^\n]*\))?\n$`)

// cutCore cuts core, a core of exe, in place: to 90, 75 and 50% of its
// size, to the sizes in cuts, and to where the data of the first, the
// median and the last goroutine ends (so that some cut lists every
// goroutine and some only a part, wherever the registry lies); largest
// first. At each cut ps -json -stacks must exit 1 with one line counting
// what was skipped, and list, as the whole core does, every goroutine
// whose data lies before the cut. A goroutine on a thread in the whole
// core need not be on it in the cut one (the cut may take the thread's
// notes or lineage region), so only those on none are compared.
func cutCore(t *testing.T, core, exe string, cuts ...int64) {
	t.Helper()
	m := openCoreMap(t, core, exe)
	full, stderr, code := psJSON(t, core, exe)
	if code != 0 || len(full) < 13 {
		t.Fatalf("whole core: exit %d, %d goroutines, stderr %q", code, len(full), stderr)
	}
	st, err := os.Stat(core)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	fps := map[uint64]int64{}
	var ends []int64
	for id, g := range m.gs {
		fps[id] = m.footprint(t, g)
		ends = append(ends, fps[id])
	}
	slices.Sort(ends)
	cuts = append(cuts, size*90/100, size*75/100, size*50/100, ends[0], ends[len(ends)/2], ends[len(ends)-1])
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for i := len(cuts) - 1; i >= 0; i-- {
		n := cuts[i]
		if n >= size {
			continue
		}
		if err := os.Truncate(core, n); err != nil {
			t.Fatal(err)
		}
		got, stderr, code := psJSON(t, core, exe)
		sm := reCutSummary.FindStringSubmatch(stderr)
		if code != 1 || sm == nil || sm[1] != fmt.Sprint(n) || sm[2] != fmt.Sprint(size) {
			t.Errorf("core cut to %d of %d bytes: exit %d, stderr %q; want 1 and one line \"core truncated at %d of %d bytes: skipped ...\"", n, size, code, stderr, n, size)
		}
		for id := range got {
			if _, ok := full[id]; !ok {
				t.Errorf("core cut to %d bytes lists goroutine %d, which the whole core does not", n, id)
			}
		}
		for id, fp := range fps {
			if fp > n {
				continue
			}
			switch l, ok := got[id]; {
			case !ok:
				t.Errorf("core cut to %d bytes: goroutine %d is not listed, though all it needs lies before the cut (up to %d)", n, id, fp)
			case l != full[id] && !strings.Contains(full[id], `"thread":`):
				t.Errorf("core cut to %d bytes: goroutine %d differs from the whole core's:\n%s\nwant\n%s", n, id, l, full[id])
			}
		}
		t.Logf("core cut to %d of %d bytes: %d of %d goroutines listed; %s", n, size, len(got), len(full), strings.TrimSpace(stderr))
	}
	// Cut before the lineage header: nothing can be listed, and the one
	// line says why (the header, or for a PIE without its notes the load
	// bias, which is found through the header) and what else was lost.
	off, ok := m.core.FileOffset(m.view.Addr)
	if !ok || off >= cuts[0] {
		return
	}
	if err := os.Truncate(core, off); err != nil {
		t.Fatal(err)
	}
	got, stderr, code := psJSON(t, core, exe)
	why := regexp.MustCompile(`reading the lineage header|load bias of this position-independent executable could not be found`)
	if want := fmt.Sprintf("core truncated at %d of %d bytes: skipped", off, size); code != 1 || len(got) != 0 || strings.Count(stderr, "\n") != 1 ||
		!why.MatchString(stderr) || !strings.Contains(stderr, want) {
		t.Errorf("core cut before its lineage header: exit %d, %d goroutines, stderr %q; want 1, none, and one line matching %q and saying %q", code, len(got), stderr, why, want)
	}
}

// patch overwrites the core file path (m's core or a copy) at the file
// offset of each address with its value, and returns a function that
// restores it.
func patch(t *testing.T, m *coreMap, path string, words map[uint64]uint64) func() {
	t.Helper()
	var undo []func()
	for addr, v := range words {
		off, ok := m.core.FileOffset(addr)
		if !ok {
			t.Fatalf("%#x is not in the core file", addr)
		}
		undo = append(undo, patchFile(t, path, off, v))
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// copyFile copies src to a new file in a temporary directory.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCorruptCore: one corrupt record, g, sudog or ancestor in a kernel
// core of testdata/parked (bytes overwritten at addresses the reader
// finds) costs its goroutine, or is shown as "?", and the rest is listed as
// from the whole core, with one line counting what was skipped; so does a
// corrupt program header, named as such.
func TestCorruptCore(t *testing.T) {
	exe := fixture(t, "parked")
	requireABI(t, exe)
	whole, _ := kernelCore(t, exe)
	m := openCoreMap(t, whole, exe)
	full, stderr, code := psJSON(t, whole, exe)
	if code != 0 {
		t.Fatalf("whole core: exit %d: %s", code, stderr)
	}
	core := copyFile(t, whole)
	// The fixture's goroutines by start function (and, for main.chain's,
	// the deepest).
	byFunc := map[string]*lineageabi.Goroutine{}
	for id, l := range full {
		var j goroutineJSON
		json.Unmarshal([]byte(l), &j)
		if j.Start == nil {
			continue
		}
		if g := byFunc[j.Start.Func]; g == nil || len(g.Record.Anc) < len(m.gs[id].Record.Anc) {
			byFunc[j.Start.Func] = m.gs[id]
		}
	}
	pick := func(fn string) *lineageabi.Goroutine {
		g := byFunc[fn]
		if g == nil {
			t.Fatalf("no goroutine starts in %s", fn)
		}
		return g
	}
	h, r := m.view.H, m.view.Reg
	const bogus uint64 = 9295429630892703745
	// An entry's start offset far beyond the text (its gopc kept).
	badStart := func(addr uint64) map[uint64]uint64 {
		addr += uint64(h.OffAncStart)
		return map[uint64]uint64{addr: m.word(t, addr)&^0xffffffff | 0xfffffff0}
	}
	deep := pick("main.chain")
	if len(deep.Record.Anc) < 2 {
		t.Fatalf("goroutine %d, the deepest of main.chain, has %d ancestors; want at least 2", deep.Goid, len(deep.Record.Anc))
	}
	for _, tc := range []struct {
		name    string
		g       *lineageabi.Goroutine
		words   map[uint64]uint64
		skipped bool     // the goroutine is left out
		corrupt []string // else these fields are flagged
	}{
		{"ancestor", deep, func() map[uint64]uint64 {
			w := badStart(deep.RecordAddr + uint64(h.OffRecAnc+h.AncSize)) // the grandparent
			w[deep.RecordAddr+uint64(h.OffRecParentGoid)] = bogus
			return w
		}(), false, []string{"parent", "ancestors"}},
		{"start pc", pick("main.sleeper"), badStart(pick("main.sleeper").RecordAddr + uint64(h.OffRecSite)), false, []string{"start"}},
		{"status", pick("main.selector"), map[uint64]uint64{
			// A runtime status beyond the map (u32; the word's upper half kept).
			pick("main.selector").G + uint64(r.OffGStatus): 0x3f | m.word(t, pick("main.selector").G+uint64(r.OffGStatus))&^0xffffffff,
		}, false, []string{"state"}},
		{"g goid", pick("main.producer"), map[uint64]uint64{pick("main.producer").G + uint64(r.OffGGoid): bogus}, true, nil},
		{"sudog", pick("main.condWaiter"), map[uint64]uint64{pick("main.condWaiter").G + uint64(r.OffGWaiting): 0x10}, true, nil},
		{"record", pick("main.waiter"), map[uint64]uint64{pick("main.waiter").RecordAddr + uint64(h.OffRecNanc): 0xffff}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer patch(t, m, core, tc.words)()
			got, stderr, code := psJSON(t, core, exe)
			what := "skipped 1 goroutine,"
			if !tc.skipped {
				what = fmt.Sprintf("skipped 0 goroutines, 0 regions, 0 notes, 0 segments; %s shown as ?", count(len(tc.corrupt), "impossible value"))
			}
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, ": damaged: "+what) {
				t.Errorf("exit %d, stderr %q; want 1 and one line saying %q", code, stderr, "damaged: "+what)
			}
			for id, l := range full {
				if id != tc.g.Goid && got[id] != l {
					t.Errorf("goroutine %d differs from the whole core's:\n%s\nwant\n%s", id, got[id], l)
				}
			}
			l, listed := got[tc.g.Goid]
			switch {
			case tc.skipped && listed:
				t.Errorf("goroutine %d is listed: %s", tc.g.Goid, l)
			case !tc.skipped && !strings.Contains(l, fmt.Sprintf(`"corrupt":["%s"]`, strings.Join(tc.corrupt, `","`))):
				t.Errorf("goroutine %d: %s\nwant \"corrupt\":%q", tc.g.Goid, l, tc.corrupt)
			case strings.Contains(l, fmt.Sprint(bogus)):
				t.Errorf("goroutine %d shows the corrupt value as fact: %s", tc.g.Goid, l)
			}
		})
	}
	t.Run("ps parent", func(t *testing.T) {
		defer patch(t, m, core, map[uint64]uint64{deep.RecordAddr + uint64(h.OffRecParentGoid): bogus})()
		out, _, _ := tool(t, "ps", "--core", core, exe)
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d +\? `, deep.Goid)).MatchString(out) {
			t.Errorf("ps: goroutine %d's parent is not shown as ?:\n%s", deep.Goid, out)
		}
	})
	// A corrupt program header is named, not taken for a cut.
	f, err := os.Open(core)
	if err != nil {
		t.Fatal(err)
	}
	var ehdr [64]byte
	f.ReadAt(ehdr[:], 0)
	f.Close()
	le := binary.LittleEndian
	phoff, phnum := le.Uint64(ehdr[32:]), int(le.Uint16(ehdr[56:]))
	text := -1 // the first page of the executable's text: nothing needs it
	for i := 0; i < phnum && text < 0; i++ {
		var ph [56]byte
		if f, err := os.Open(core); err == nil {
			f.ReadAt(ph[:], int64(phoff)+int64(i)*56)
			f.Close()
		}
		if le.Uint32(ph[:]) == 1 && le.Uint32(ph[4:])&1 != 0 && le.Uint64(ph[32:]) > 0 {
			text = i
		}
	}
	if text < 0 {
		t.Fatal("no PT_LOAD of the executable's text in the core")
	}
	for _, tc := range []struct {
		name  string
		field uint64 // in the program header
		v     uint64
	}{
		{"offset overflows", 8, 1<<64 - 4096},
		{"file size past the file", 32, 1 << 40},
	} {
		t.Run("program header "+tc.name, func(t *testing.T) {
			addr := phoff + uint64(text)*56 + tc.field
			restore := patchFile(t, core, int64(addr), tc.v)
			defer restore()
			got, stderr, code := psJSON(t, core, exe)
			want := fmt.Sprintf("(first: core file: program header %d: ", text)
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "truncated") || !strings.Contains(stderr, "1 segment") {
				t.Errorf("exit %d, stderr %q; want 1 and one line naming %q, 1 segment, not a cut", code, stderr, want)
			}
			if len(got) != len(full) {
				t.Errorf("%d goroutines listed, want %d", len(got), len(full))
			}
		})
	}
}

// patchFile writes v at offset off of file path and returns a function
// that restores the old bytes.
func patchFile(t *testing.T, path string, off int64, v uint64) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := make([]byte, 8)
	if _, err := f.ReadAt(old, off); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	return func() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(old, off); err != nil {
			t.Fatal(err)
		}
	}
}
