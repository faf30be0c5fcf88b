// Package report turns raw `go test -bench` output from several variants
// (toolchains, possibly with environment settings) into the harness's
// outputs: per-benchmark statistics, ratios against a baseline variant, a
// CSV file, Markdown tables and an SVG chart.
package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Measurement is one value of one benchmark result line.
type Measurement struct {
	Name  string // benchmark name without the -GOMAXPROCS suffix
	Unit  string // "ns/op", "B/op", "MB/s", custom units
	Value float64
}

// Parse reads benchmark output in the standard format ("BenchmarkX-2  N
// value unit [value unit]..."), skipping every other line (configuration
// headers, PASS, ok, logs). A line that starts like a result but whose
// values do not parse is an error: it means the output was corrupted, and
// silently dropping it would skew the comparison.
func Parse(r io.Reader) ([]Measurement, error) {
	var out []Measurement
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	lineno := 0
	for sc.Scan() {
		lineno++
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a name on its own line, or prose starting with "Benchmark"
		}
		if len(f) < 4 || len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: malformed benchmark result %q", lineno, sc.Text())
		}
		name := trimProcs(f[0])
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: bad value %q for %s", lineno, f[i], name)
			}
			out = append(out, Measurement{Name: name, Unit: f[i+1], Value: v})
		}
	}
	return out, sc.Err()
}

// trimProcs removes the "-N" GOMAXPROCS suffix the testing package appends.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}
