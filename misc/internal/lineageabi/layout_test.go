package lineageabi

import (
	"bufio"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLayoutMatchesDoc checks the header layout defined here against the
// table in doc/lineage-abi.md, section 2: the named field positions, the
// cookie, and the order of the u32 run that ParseHeader indexes from
// max_depth.
func TestLayoutMatchesDoc(t *testing.T) {
	f, err := os.Open("../../../doc/lineage-abi.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct {
		off, size int
		meaning   string
	}
	rows := map[string]row{}
	var order []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## 2. Header"):
			in = true
		case in && strings.HasPrefix(l, "#"):
			in = false
		case in && strings.HasPrefix(l, "| "):
			c := strings.Split(l, "|")
			off, err1 := strconv.Atoi(strings.TrimSpace(c[1]))
			size, err2 := strconv.Atoi(strings.TrimSpace(c[2]))
			if err1 != nil || err2 != nil {
				continue // the heading
			}
			name := strings.Fields(c[3])[0]
			rows[name] = row{off, size, c[4]}
			order = append(order, name)
		}
	}
	if len(rows) < 30 {
		t.Fatalf("found %d header rows in doc/lineage-abi.md, want the whole table", len(rows))
	}
	for name, off := range map[string]int{
		"magic": OffMagic, "version": OffVersion, "header_size": OffHeaderSize, "ptr_size": OffPtrSize,
		"flags": OffFlags, "self": OffSelf, "regions": OffRegions, "nregions": OffNRegions,
		"max_depth": OffMaxDepth, "region_size": OffRegionSize, "off_region_seq": OffTable,
		"off_rec_stack": OffRecStack, "off_g_record": OffGRecord, "tls_g_offset": OffTLSGOffset,
	} {
		if r, ok := rows[name]; !ok || r.off != off {
			t.Errorf("%s: doc says offset %d (found %v), the reader uses %d", name, r.off, ok, off)
		}
	}
	if r := rows["reserved"]; r.off+r.size != HeaderSize {
		t.Errorf("doc's header ends at %d, HeaderSize is %d", r.off+r.size, HeaderSize)
	}
	var magic []string
	for _, b := range Magic {
		magic = append(magic, strconv.FormatUint(uint64(b)|0x100, 16)[1:])
	}
	if !strings.Contains(rows["magic"].meaning, "`"+strings.Join(magic, " ")+"`") {
		t.Errorf("doc's magic %q lacks the reader's %s", rows["magic"].meaning, strings.Join(magic, " "))
	}
	// ParseHeader reads the fields from max_depth to off_g_record as
	// consecutive u32s, in the doc's order.
	want := []string{"max_depth", "max_stack", "record_size", "region_size",
		"off_region_seq", "off_region_tid", "off_region_cur", "off_region_next", "off_region_mid", "off_region_state",
		"off_rec_seq", "off_rec_goid", "off_rec_startpc", "off_rec_gopc", "off_rec_parent_goid",
		"off_rec_nanc", "off_rec_nstk", "off_rec_flags", "off_rec_depth", "off_rec_anc",
		"anc_size", "off_anc_goid", "off_anc_startpc", "off_anc_gopc",
		"off_rec_stack", "off_g_m", "off_m_region", "off_g_record"}
	for i, name := range want {
		if r := rows[name]; r.off != OffMaxDepth+4*i || r.size != 4 {
			t.Errorf("%s: doc says offset %d size %d; ParseHeader reads u32 %d after max_depth (offset %d)", name, r.off, r.size, i, OffMaxDepth+4*i)
		}
	}
	// And the header built from the doc's values parses to them.
	b := v1Header(8, 4)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.OffRegionCur != binary.LittleEndian.Uint32(b[rows["off_region_cur"].off:]) || h.OffGRecord != binary.LittleEndian.Uint32(b[rows["off_g_record"].off:]) {
		t.Errorf("ParseHeader misplaces fields: %+v", h)
	}
}

// FuzzLoad: a process image made of a header and one page of regions and
// records, both fuzzed, never makes Load or Thread panic or loop.
func FuzzLoad(f *testing.F) {
	const hdrAddr, pageAddr = 0x1000, 0x10000
	hdr := v1Header(8, 4)
	binary.LittleEndian.PutUint64(hdr[OffSelf:], hdrAddr)
	binary.LittleEndian.PutUint64(hdr[OffRegions:], pageAddr)
	binary.LittleEndian.PutUint64(hdr[OffNRegions:], 1)
	h, _ := ParseHeader(hdr)
	page := make([]byte, 4096)
	binary.LittleEndian.PutUint64(page[h.OffRegionTid:], 77)
	binary.LittleEndian.PutUint32(page[h.OffRegionState:], 1)
	binary.LittleEndian.PutUint64(page[h.OffRegionCur:], pageAddr+256)
	copy(page[256:], record(h, 2, 30, 0x2000, 20, []Anc{{20, 1, 2}, {1, 3, 4}}, []uint64{0x2000}))
	f.Add(hdr, page)
	f.Fuzz(func(t *testing.T, hdr, page []byte) {
		mem := memMap{hdrAddr: hdr, pageAddr: page}
		a := &ABI{Addr: hdrAddr, Static: &Header{HeaderSize: HeaderSize}}
		v, err := a.Load(mem, 0)
		if err != nil {
			return
		}
		for _, tid := range v.Threads() {
			if r, err := v.Thread(tid); err == nil && r != nil {
				if len(r.Anc) > int(v.H.MaxDepth) || len(r.Stack) > int(v.H.MaxStack) {
					t.Fatalf("record exceeds capacity: %d ancestors, %d stack", len(r.Anc), len(r.Stack))
				}
				Chain(r)
			}
		}
	})
}
