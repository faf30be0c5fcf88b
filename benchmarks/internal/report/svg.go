package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// palette colours the non-baseline variants, in order.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"}

// Chart geometry, in SVG user units (pixels).
const (
	plotWidth   = 560
	rightSpace  = 110 // room for the ratio text of the longest bar
	barHeight   = 14
	rowGap      = 8
	headerSpace = 70
	footerSpace = 40
)

// WriteSVG draws one horizontal bar per key and non-baseline variant: the
// ratio of the variant's median to the baseline's, on a logarithmic axis
// centred on 1 (bars to the left are smaller values than the baseline's,
// to the right larger). Each row is labelled with the benchmark, its unit
// if not ns/op, and the baseline's median.
func WriteSVG(w io.Writer, s *Suite) error {
	others := s.others()
	type bar struct {
		variant int
		st      Stat
	}
	type row struct {
		label string
		bars  []bar
	}
	var rows []row
	lo, hi := 0.5, 2.0
	for _, k := range s.Keys {
		r := row{label: strings.TrimPrefix(k.Name, "Benchmark")}
		if k.Unit != "ns/op" {
			r.label += " [" + k.Unit + "]"
		}
		if st, ok := s.Stat(k, s.Baseline); ok {
			r.label += " (" + s.Baseline + " " + FormatValue(st.Median, k.Unit) + ")"
		}
		for i, v := range others {
			st, ok := s.Stat(k, v)
			if !ok || math.IsNaN(st.Ratio) || st.Ratio <= 0 {
				continue
			}
			r.bars = append(r.bars, bar{i, st})
			lo, hi = math.Min(lo, st.Ratio), math.Max(hi, st.Ratio)
		}
		rows = append(rows, r)
	}
	// Labels are right-aligned against the plot; size the margin for the
	// longest (about 6.7 units a character at font-size 12).
	longest := 0
	for _, r := range rows {
		longest = max(longest, utf8.RuneCountInString(r.label))
	}
	labelWidth := max(200, int(6.7*float64(longest))+20)
	chartWidth := labelWidth + plotWidth + rightSpace
	// Symmetric decades around 1 so that 2x faster and 2x slower look alike.
	span := math.Max(math.Ceil(-math.Log10(lo)*2)/2, math.Ceil(math.Log10(hi)*2)/2)
	x := func(ratio float64) float64 {
		return float64(labelWidth) + plotWidth/2 + math.Log10(ratio)/span*plotWidth/2
	}
	rowH := func(r row) int { return max(1, len(others))*barHeight + rowGap }
	height := headerSpace + footerSpace
	for _, r := range rows {
		height += rowH(r)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="16" font-weight="bold">%s: median ratio to %s (log scale; left of 1 = smaller value)</text>`+"\n", esc(s.Name), esc(s.Baseline))
	// Legend.
	lx := 10.0
	for i, v := range others {
		fmt.Fprintf(&b, `<rect x="%.0f" y="34" width="12" height="12" fill="%s"/><text x="%.0f" y="45">%s</text>`+"\n", lx, palette[i%len(palette)], lx+16, esc(v))
		lx += 16 + 7.5*float64(len(v)) + 24
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="45" fill="#555">~ : not significant (p &gt; 0.05)</text>`+"\n", lx)
	// Grid and ticks.
	top, bottom := headerSpace-8, height-footerSpace+4
	for _, t := range ticks(span) {
		tx := x(t)
		stroke := "#ddd"
		if t == 1 {
			stroke = "#333"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", tx, top, tx, bottom, stroke)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%g×</text>`+"\n", tx, bottom+16, t)
	}
	y := headerSpace
	for ri, r := range rows {
		h := rowH(r)
		if ri%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f4f4f4" fill-opacity="0.6"/>`+"\n", y-rowGap/2, chartWidth, h)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+h/2, esc(r.label))
		for _, br := range r.bars {
			by := y + br.variant*barHeight
			x0, x1 := x(1), x(br.st.Ratio)
			if x1 < x0 {
				x0, x1 = x1, x0
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, by, math.Max(x1-x0, 1), barHeight-2, palette[br.variant%len(palette)])
			tx, anchor := x(br.st.Ratio)+4, "start"
			if br.st.Ratio < 1 {
				tx, anchor = x(br.st.Ratio)-4, "end"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s" font-size="11">%s</text>`+"\n", tx, by+barHeight-4, anchor, esc(FormatRatio(br.st)))
		}
		y += h
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ticks returns 1, 2, 5 steps per decade within 10^±span.
func ticks(span float64) []float64 {
	var t []float64
	for e := -math.Ceil(span); e <= math.Ceil(span); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if l := math.Log10(v); l >= -span-1e-9 && l <= span+1e-9 {
				t = append(t, v)
			}
		}
	}
	return t
}

func esc(s string) string { return html.EscapeString(s) }
