// Package runcheck parses the output of a program run with
// GODEBUG=fpunwindcheck=2, in which the fork's runtime repeats every
// frame-pointer unwind it performs for a profile or trace record with the
// slow unwinder and compares the two.
//
// The lines, on the program's stderr:
//
//	fpunwindcheck: mismatch site=<site> goid=<n> fp=[0x..,..] slow=[0x..,..]
//	fpunwindcheck: site=<site> checked=<n> mismatches=<m>
//	fpunwindcheck: checked=<N> mismatches=<M>
package runcheck

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Prefix starts every line of the runtime's report.
const Prefix = "fpunwindcheck: "

// Mismatch is one reported disagreement.
type Mismatch struct {
	Site string
	Goid int64
	FP   []uint64
	Slow []uint64
}

// FirstDiff returns the index of the first differing PC.
func (m *Mismatch) FirstDiff() int {
	for i := 0; i < len(m.FP) && i < len(m.Slow); i++ {
		if m.FP[i] != m.Slow[i] {
			return i
		}
	}
	if len(m.FP) == len(m.Slow) {
		return -1
	}
	return min(len(m.FP), len(m.Slow))
}

// SiteCount is the per-site summary.
type SiteCount struct {
	Site                string
	Checked, Mismatches int64
}

// Report is what the runtime printed.
type Report struct {
	Lines      int // fpunwindcheck lines seen
	Mismatches []Mismatch
	Sites      []SiteCount
	HaveTotal  bool
	Checked    int64
	Mismatched int64
	Malformed  []string
}

// Parser accumulates a report from lines.
type Parser struct{ R Report }

// Line consumes one line of output (without the newline).
func (p *Parser) Line(line string) {
	i := strings.Index(line, Prefix)
	if i < 0 {
		return
	}
	p.R.Lines++
	body := line[i+len(Prefix):]
	kv, ok := fields(body)
	if !ok {
		p.R.Malformed = append(p.R.Malformed, line)
		return
	}
	switch {
	case strings.HasPrefix(body, "mismatch "):
		m := Mismatch{Site: kv["site"]}
		m.Goid, _ = strconv.ParseInt(kv["goid"], 10, 64)
		var err1, err2 error
		m.FP, err1 = pcs(kv["fp"])
		m.Slow, err2 = pcs(kv["slow"])
		if err1 != nil || err2 != nil {
			p.R.Malformed = append(p.R.Malformed, line)
			return
		}
		p.R.Mismatches = append(p.R.Mismatches, m)
	case kv["site"] != "":
		c, err1 := strconv.ParseInt(kv["checked"], 10, 64)
		m, err2 := strconv.ParseInt(kv["mismatches"], 10, 64)
		if err1 != nil || err2 != nil {
			p.R.Malformed = append(p.R.Malformed, line)
			return
		}
		p.R.Sites = append(p.R.Sites, SiteCount{kv["site"], c, m})
	case kv["checked"] != "":
		c, err1 := strconv.ParseInt(kv["checked"], 10, 64)
		m, err2 := strconv.ParseInt(kv["mismatches"], 10, 64)
		if err1 != nil || err2 != nil {
			p.R.Malformed = append(p.R.Malformed, line)
			return
		}
		p.R.HaveTotal, p.R.Checked, p.R.Mismatched = true, c, m
	default:
		p.R.Malformed = append(p.R.Malformed, line)
	}
}

// fields splits "mismatch site=x goid=1 fp=[..]" into key=value pairs.
func fields(s string) (map[string]string, bool) {
	kv := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			if f == "mismatch" {
				continue
			}
			return nil, false
		}
		kv[k] = v
	}
	return kv, true
}

func pcs(s string) ([]uint64, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("bad pc list %q", s)
	}
	s = strings.Trim(s, "[]")
	if s == "" {
		return nil, nil
	}
	var out []uint64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(p), "0x"), 16, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Consistent reports problems between the total and the per-site lines.
func (r *Report) Consistent() error {
	var c, m int64
	for _, s := range r.Sites {
		c += s.Checked
		m += s.Mismatches
	}
	if r.HaveTotal && len(r.Sites) > 0 && (c != r.Checked || m != r.Mismatched) {
		return fmt.Errorf("per-site counts (checked=%d mismatches=%d) disagree with the total (checked=%d mismatches=%d)", c, m, r.Checked, r.Mismatched)
	}
	if r.HaveTotal && int64(len(r.Mismatches)) > r.Mismatched {
		return fmt.Errorf("%d mismatch lines but a total of %d mismatches", len(r.Mismatches), r.Mismatched)
	}
	return nil
}

// Symbolizer names a PC ("" if unknown).
type Symbolizer func(pc uint64) string

// Write prints the findings and the summary table.
func (r *Report) Write(w io.Writer, sym Symbolizer) {
	name := func(pc uint64) string {
		if sym != nil {
			if n := sym(pc); n != "" {
				return fmt.Sprintf("%#x %s", pc, n)
			}
		}
		return fmt.Sprintf("%#x", pc)
	}
	for _, m := range r.Mismatches {
		d := m.FirstDiff()
		fp, slow := "(end)", "(end)"
		if d >= 0 && d < len(m.FP) {
			fp = name(m.FP[d])
		}
		if d >= 0 && d < len(m.Slow) {
			slow = name(m.Slow[d])
		}
		fmt.Fprintf(w, "fpcheck run: mismatch site=%s goid=%d: frame %d: frame-pointer unwind has %s, gentraceback has %s (fp %d frames, slow %d frames)\n",
			m.Site, m.Goid, d, fp, slow, len(m.FP), len(m.Slow))
	}
	for _, l := range r.Malformed {
		fmt.Fprintf(w, "fpcheck run: unparsed line: %s\n", l)
	}
	sites := append([]SiteCount(nil), r.Sites...)
	sort.Slice(sites, func(i, j int) bool { return sites[i].Site < sites[j].Site })
	fmt.Fprintf(w, "fpcheck run: %-12s %14s %12s\n", "SITE", "CHECKED", "MISMATCHES")
	for _, s := range sites {
		fmt.Fprintf(w, "fpcheck run: %-12s %14d %12d\n", s.Site, s.Checked, s.Mismatches)
	}
	if r.HaveTotal {
		fmt.Fprintf(w, "fpcheck run: %-12s %14d %12d\n", "total", r.Checked, r.Mismatched)
		fmt.Fprintf(w, "fpcheck run: %d unwinds cross-checked, %d mismatches\n", r.Checked, r.Mismatched)
	}
}
