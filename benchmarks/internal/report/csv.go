package report

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
)

// CSVHeader is the first row WriteCSV writes.
var CSVHeader = []string{"suite", "benchmark", "unit", "variant", "samples", "median", "min", "max", "ratio_vs_baseline", "p_value"}

// WriteCSV writes one row per suite, key and variant. header controls
// whether the header row is written first, so several suites can share a
// file.
func WriteCSV(w io.Writer, s *Suite, header bool) error {
	cw := csv.NewWriter(w)
	if header {
		if err := cw.Write(CSVHeader); err != nil {
			return err
		}
	}
	for _, k := range s.Keys {
		for _, v := range s.Variants {
			st, ok := s.Stat(k, v)
			if !ok {
				continue
			}
			ratio := ""
			if !math.IsNaN(st.Ratio) {
				ratio = fmtFloat(st.Ratio)
			}
			rec := []string{s.Name, k.Name, k.Unit, v, strconv.Itoa(st.N),
				fmtFloat(st.Median), fmtFloat(st.Min), fmtFloat(st.Max), ratio, fmtFloat(st.P)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
