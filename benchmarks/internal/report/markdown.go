package report

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the suite as a Markdown table: the baseline's
// median, then every other variant's ratio to it.
func WriteMarkdown(w io.Writer, s *Suite) error {
	var b strings.Builder
	others := s.others()
	fmt.Fprintf(&b, "| %s | %s |", s.Name, s.Baseline)
	for _, v := range others {
		fmt.Fprintf(&b, " %s / %s |", v, s.Baseline)
	}
	b.WriteString("\n|---|---:|")
	for range others {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, k := range s.Keys {
		name := k.Name
		if k.Unit != "ns/op" {
			name += " [" + k.Unit + "]"
		}
		base := "-"
		if st, ok := s.Stat(k, s.Baseline); ok {
			base = FormatValue(st.Median, k.Unit)
		}
		fmt.Fprintf(&b, "| %s | %s |", mdEscape(name), base)
		for _, v := range others {
			cell := "-"
			if st, ok := s.Stat(k, v); ok {
				cell = FormatRatio(st)
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (s *Suite) others() []string {
	var o []string
	for _, v := range s.Variants {
		if v != s.Baseline {
			o = append(o, v)
		}
	}
	return o
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
