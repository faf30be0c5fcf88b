package lineageabi

import (
	"bufio"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
)

// docField is one row of the header tables of doc/lineage-abi.md.
type docField struct {
	name      string
	off, size int
	rt        bool // marked *[rt]*: filled in at run time
	meaning   string
}

// docHeader parses the header tables of doc/lineage-abi.md: every table row
// whose first column is an offset, under a heading that names the Header
// ("## 2. Header") or "header offsets" (the registry's fields). A row is "| off | size | field ... | meaning |"
// or "| off | field type ... | meaning |" (the size then comes from the
// type: u64, i64 8; [N]byte, [N]u8 N; else 4). The field's name is the
// first word of its column; *[rt]* in that column marks a run-time field.
func docHeader(t *testing.T) []docField {
	t.Helper()
	fs := parseHeaderDoc(t, "../../../doc/lineage-abi.md")
	if !hasField(fs, "text_base") {
		t.Fatalf("doc/lineage-abi.md describes no version 2 header (no text_base row)")
	}
	return fs
}

func hasField(fs []docField, name string) bool {
	for _, f := range fs {
		if f.name == name {
			return true
		}
	}
	return false
}

func parseHeaderDoc(t *testing.T, path string) []docField {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docField
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#"):
			in = strings.Contains(l, "Header") || strings.Contains(l, "header offsets")
		case in && strings.HasPrefix(l, "| "):
			c := strings.Split(l, "|")
			if len(c) < 4 {
				continue
			}
			off, err := strconv.Atoi(strings.TrimSpace(c[1]))
			if err != nil {
				continue // the heading
			}
			nameCol, meaning := c[2], c[3]
			size, err := strconv.Atoi(strings.TrimSpace(c[2]))
			if err == nil {
				nameCol, meaning = c[3], strings.Join(c[4:], "|")
			} else {
				size = typeSize(nameCol)
			}
			w := strings.Fields(strings.ReplaceAll(nameCol, "`", ""))
			if len(w) == 0 {
				continue
			}
			out = append(out, docField{w[0], off, size, strings.Contains(nameCol, "*[rt]*"), meaning})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// typeSize is the size of a field from the type written after its name.
func typeSize(col string) int {
	for _, w := range strings.Fields(col)[1:] {
		switch {
		case w == "u64" || w == "i64":
			return 8
		case strings.HasPrefix(w, "["):
			if i := strings.Index(w, "]"); i > 0 {
				if n, err := strconv.Atoi(w[1:i]); err == nil {
					return n
				}
			}
		}
	}
	return 4
}

// TestLayoutMatchesDoc checks HeaderFields, the layout ParseHeader and the
// file/memory check use, against the doc's tables: the same fields at the
// same offsets with the same sizes, the same *[rt]* marks, and the cookie.
func TestLayoutMatchesDoc(t *testing.T) {
	doc := docHeader(t)
	if len(doc) < 60 {
		t.Fatalf("found %d header rows in the doc, want the whole table", len(doc))
	}
	if len(doc) != len(HeaderFields) {
		t.Errorf("the doc has %d header fields, HeaderFields %d", len(doc), len(HeaderFields))
	}
	for i := range min(len(doc), len(HeaderFields)) {
		d, f := doc[i], HeaderFields[i]
		if d.name != f.Name || d.off != f.Off || d.size != f.Size || d.rt != f.RT {
			t.Errorf("field %d: doc has %s at %d, %d bytes, rt %v; the reader %s at %d, %d bytes, rt %v",
				i, d.name, d.off, d.size, d.rt, f.Name, f.Off, f.Size, f.RT)
		}
	}
	var magic []string
	for _, b := range Magic {
		magic = append(magic, strconv.FormatUint(uint64(b)|0x100, 16)[1:])
	}
	if m := doc[0].meaning; doc[0].name == "magic" && !strings.Contains(m, "`"+strings.Join(magic, " ")+"`") && !strings.Contains(m, "as version 1") {
		t.Errorf("doc's magic %q lacks the reader's %s", m, strings.Join(magic, " "))
	}
	// And the header built from the doc's values parses to them.
	b := v2Header(8, 4)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string) uint32 {
		for _, d := range doc {
			if d.name == name {
				return binary.LittleEndian.Uint32(b[d.off:])
			}
		}
		t.Fatalf("no %s in the doc", name)
		return 0
	}
	if h.OffRegionCur != at("off_region_cur") || h.OffGRecord != at("off_g_record") || h.OffRecSite != at("off_rec_site") || h.OffAncGoPC != at("off_anc_gopc") {
		t.Errorf("ParseHeader misplaces fields: %+v", h)
	}
	h.Flags |= FlagRegistry
	r, err := parseRegistry(h, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.OffSudogIsSelect != at("off_sudog_isselect") || r.StatusScan != at("status_scan") || r.OffLabelValue != at("off_label_value") || r.NWaitReasons != at("n_wait_reasons") {
		t.Errorf("parseRegistry misplaces fields: %+v", r)
	}
}

// FuzzLoad: a process image made of a header and one page of regions and
// records, both fuzzed, never makes Load or Thread panic or loop.
func FuzzLoad(f *testing.F) {
	const hdrAddr, pageAddr = 0x1000, 0x10000
	hdr := v2Header(8, 4)
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
