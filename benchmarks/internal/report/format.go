package report

import (
	"fmt"
	"math"
	"strings"
)

// FormatValue renders a value with its unit for people: durations scaled
// to ns/µs/ms/s, byte counts to kB/MB, the rest with three significant
// digits.
func FormatValue(v float64, unit string) string {
	switch {
	case unit == "ns/op" || strings.HasSuffix(unit, "-ns/op"):
		prefix := strings.TrimSuffix(unit, "ns/op")
		return scaleTime(v) + suffix(prefix)
	case unit == "binary-bytes" || unit == "B/op":
		return scaleBytes(v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

func suffix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " (" + strings.TrimSuffix(prefix, "-") + ")"
}

func scaleTime(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	}
	return fmt.Sprintf("%.3gns", ns)
}

func scaleBytes(b float64) string {
	switch {
	case b >= 1e6:
		return fmt.Sprintf("%.4g MB", b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.4g kB", b/1e3)
	}
	return fmt.Sprintf("%.4g B", b)
}

// FormatRatio renders a ratio to the baseline, marked "~" when the
// difference is not statistically significant.
func FormatRatio(st Stat) string {
	if math.IsNaN(st.Ratio) {
		return "-"
	}
	s := fmt.Sprintf("%.3g×", st.Ratio)
	if st.Ratio >= 10 {
		s = fmt.Sprintf("%.1f×", st.Ratio)
	}
	if !Significant(st.P) {
		s += " ~"
	}
	return s
}
