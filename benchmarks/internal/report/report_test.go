package report

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

const upstreamOut = `goos: linux
goarch: amd64
pkg: fpsafe/benchmarks/heap
cpu: AMD EPYC
BenchmarkAlloc64/depth=32/rate=1-2   	   65846	      2000 ns/op
BenchmarkAlloc64/depth=32/rate=1-2   	   65846	      3000 ns/op
BenchmarkAlloc64/depth=32/rate=1-2   	   65846	      4000 ns/op
BenchmarkJSON-2      	      18	   6000000 ns/op	 105.16 MB/s
BenchmarkFgprof/goroutines=1000-2   	       2	   3395479 ns/op	        95.61 samples/s
Benchmark names in prose are skipped
BenchmarkPrintedAlone
PASS
ok  	fpsafe/benchmarks/heap	2.866s
`

const forkOut = `BenchmarkAlloc64/depth=32/rate=1-2   	   65846	      1000 ns/op
BenchmarkAlloc64/depth=32/rate=1-2   	   65846	      1000 ns/op
BenchmarkAlloc64/depth=32/rate=1-2   	   65846	      1000 ns/op
BenchmarkJSON-2      	      18	   6000000 ns/op	 105.16 MB/s
BenchmarkOnlyInFork-2  1  5 ns/op
`

func mustParse(t *testing.T, s string) []Measurement {
	t.Helper()
	ms, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestParse(t *testing.T) {
	ms := mustParse(t, upstreamOut)
	if len(ms) != 7 {
		t.Fatalf("got %d measurements, want 7: %v", len(ms), ms)
	}
	want := Measurement{"BenchmarkFgprof/goroutines=1000", "samples/s", 95.61}
	if ms[6] != want {
		t.Errorf("last measurement = %+v, want %+v", ms[6], want)
	}
	if ms[3].Name != "BenchmarkJSON" || ms[4].Unit != "MB/s" {
		t.Errorf("JSON line parsed as %+v %+v", ms[3], ms[4])
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		"BenchmarkX-2 10 12.5\n",      // value without unit
		"BenchmarkX-2 10 abc ns/op\n", // value not a number
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestTrimProcs(t *testing.T) {
	for in, want := range map[string]string{
		"BenchmarkA-2":         "BenchmarkA",
		"BenchmarkA/n=-1-16":   "BenchmarkA/n=-1",
		"BenchmarkA/x-y":       "BenchmarkA/x-y",
		"BenchmarkNoSuffix":    "BenchmarkNoSuffix",
		"BenchmarkA/rate=1-2":  "BenchmarkA/rate=1",
		"BenchmarkA/depth=128": "BenchmarkA/depth=128",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}

func testSuite(t *testing.T) *Suite {
	s := NewSuite("heap", "upstream", []string{"upstream", "fork"})
	s.Add("upstream", mustParse(t, upstreamOut))
	s.Add("fork", mustParse(t, forkOut))
	return s
}

func TestStat(t *testing.T) {
	s := testSuite(t)
	k := Key{"BenchmarkAlloc64/depth=32/rate=1", "ns/op"}
	up, _ := s.Stat(k, "upstream")
	if up.N != 3 || up.Median != 3000 || up.Min != 2000 || up.Max != 4000 || up.Ratio != 1 {
		t.Errorf("upstream stat = %+v", up)
	}
	fk, _ := s.Stat(k, "fork")
	if math.Abs(fk.Ratio-1.0/3) > 1e-12 {
		t.Errorf("fork ratio = %v, want 1/3", fk.Ratio)
	}
	if fk.P > 0.2 || fk.P <= 0 {
		t.Errorf("fork p = %v; three disjoint samples each give p = 0.1", fk.P)
	}
	only, ok := s.Stat(Key{"BenchmarkOnlyInFork", "ns/op"}, "fork")
	if !ok || !math.IsNaN(only.Ratio) {
		t.Errorf("benchmark missing from the baseline: stat %+v, ok %v; want NaN ratio", only, ok)
	}
	if _, ok := s.Stat(Key{"BenchmarkOnlyInFork", "ns/op"}, "upstream"); ok {
		t.Error("Stat reported samples the baseline does not have")
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %v", m)
	}
}

func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, testSuite(t), true); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header + (alloc, json ns/op, json MB/s) x 2 + fgprof x 2 units x upstream + onlyinfork
	if len(recs) != 1+6+2+1 {
		t.Fatalf("%d records:\n%v", len(recs), recs)
	}
	found := false
	for _, r := range recs[1:] {
		if r[1] == "BenchmarkAlloc64/depth=32/rate=1" && r[3] == "fork" {
			found = true
			if r[5] != "1000" || !strings.HasPrefix(r[8], "0.3333") {
				t.Errorf("fork alloc row = %v", r)
			}
		}
	}
	if !found {
		t.Error("no fork row for BenchmarkAlloc64")
	}
}

func TestMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, testSuite(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| heap | upstream | fork / upstream |",
		"| BenchmarkAlloc64/depth=32/rate=1 | 3µs | 0.333× ~ |", // 3 vs 3 samples: p = 0.1
		"| BenchmarkJSON [MB/s] | 105 MB/s | 1× ~ |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestSVG(t *testing.T) {
	var buf bytes.Buffer
	s := testSuite(t)
	if err := WriteSVG(&buf, s); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, one bar per (key, non-baseline variant) with a ratio.
	d := xml.NewDecoder(&buf)
	rects := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local == "height" && a.Value == "12" {
					rects++
				}
			}
		}
	}
	// Alloc, JSON ns/op, JSON MB/s have fork bars; Fgprof and OnlyInFork do not.
	if rects != 3+1 { // + the legend swatch
		t.Errorf("%d bars+legend, want 4", rects)
	}
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{1175, "ns/op", "1.18µs"},
		{22.6e6, "ns/op", "22.6ms"},
		{3.2e9, "ns/op", "3.2s"},
		{13699144, "binary-bytes", "13.7 MB"},
		{95.61, "samples/s", "95.6 samples/s"},
		{33.35, "unprofiled-ns/op", "33.4ns (unprofiled)"},
	} {
		if got := FormatValue(c.v, c.unit); got != c.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestSignificantWithEnoughSamples(t *testing.T) {
	s := NewSuite("x", "a", []string{"a", "b"})
	for i := range 8 {
		s.Add("a", []Measurement{{"BenchmarkX", "ns/op", 100 + float64(i)}})
		s.Add("b", []Measurement{{"BenchmarkX", "ns/op", 50 + float64(i)}})
	}
	st, _ := s.Stat(Key{"BenchmarkX", "ns/op"}, "b")
	if !Significant(st.P) || FormatRatio(st) != "0.517×" {
		t.Errorf("8 disjoint samples: p = %v, ratio %q", st.P, FormatRatio(st))
	}
}
