package runcheck

import (
	"io"
	"strings"
	"testing"
)

func parse(lines ...string) *Report {
	var p Parser
	for _, l := range lines {
		p.Line(l)
	}
	return &p.R
}

func TestParse(t *testing.T) {
	r := parse(
		"unrelated output",
		"fpunwindcheck: mismatch site=heap goid=12 fp=[0x1,0x2] slow=[0x1,0x3,0x4]",
		"fpunwindcheck: site=heap checked=100 mismatches=1",
		"fpunwindcheck: site=trace checked=50 mismatches=0",
		"fpunwindcheck: checked=150 mismatches=1",
	)
	if r.Lines != 4 || !r.HaveTotal || r.Checked != 150 || r.Mismatched != 1 || len(r.Sites) != 2 || len(r.Mismatches) != 1 {
		t.Fatalf("bad report: %+v", r)
	}
	m := r.Mismatches[0]
	if m.Site != "heap" || m.Goid != 12 || len(m.FP) != 2 || len(m.Slow) != 3 || m.FirstDiff() != 1 {
		t.Fatalf("bad mismatch: %+v diff=%d", m, m.FirstDiff())
	}
	if err := r.Consistent(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.Write(&b, func(pc uint64) string { return map[uint64]string{2: "f", 3: "g"}[pc] })
	for _, w := range []string{"frame 1: frame-pointer unwind has 0x2 f, gentraceback has 0x3 g", "150 unwinds cross-checked, 1 mismatches"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, b.String())
		}
	}
}

func TestParseBad(t *testing.T) {
	r := parse("fpunwindcheck: site=heap checked=x mismatches=0", "fpunwindcheck: mismatch site=heap goid=1 fp=0x1 slow=[]", "fpunwindcheck: garbage")
	if len(r.Malformed) != 3 || r.HaveTotal {
		t.Fatalf("malformed lines not reported: %+v", r)
	}
	r = parse("fpunwindcheck: site=heap checked=10 mismatches=0", "fpunwindcheck: checked=11 mismatches=0")
	if r.Consistent() == nil {
		t.Fatal("inconsistent totals accepted")
	}
	r = parse("fpunwindcheck: mismatch site=heap goid=1 fp=[0x1] slow=[0x1]", "fpunwindcheck: checked=1 mismatches=0")
	if r.Consistent() == nil {
		t.Fatal("mismatch lines beyond the total accepted")
	}
}

// FuzzParser: the report lines come from the program's stderr, foreign
// input; parsing, checking and writing them must not panic, and every line
// with the prefix is counted.
func FuzzParser(f *testing.F) {
	f.Add("fpunwindcheck: mismatch site=block goid=7 fp=[0x401000,0x401100] slow=[0x401000]\nfpunwindcheck: checked=1 mismatches=1\n")
	f.Add("fpunwindcheck: site=heap checked=5 mismatches=0\nfpunwindcheck: fp=[ slow=]\n")
	f.Fuzz(func(t *testing.T, s string) {
		var p Parser
		want := 0
		for _, l := range strings.Split(s, "\n") {
			p.Line(l)
			if strings.Contains(l, Prefix) {
				want++
			}
		}
		if p.R.Lines != want {
			t.Fatalf("counted %d report lines, want %d", p.R.Lines, want)
		}
		p.R.Consistent()
		p.R.Write(io.Discard, nil)
	})
}
