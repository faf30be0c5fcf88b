package report

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Key identifies a row: one benchmark and one of its units.
type Key struct {
	Name, Unit string
}

// Suite is the collected results of one suite for all variants.
type Suite struct {
	Name     string
	Baseline string   // the variant ratios are taken against
	Variants []string // in column order; includes Baseline
	Keys     []Key    // in order of first appearance
	samples  map[Key]map[string][]float64
}

// NewSuite returns an empty suite.
func NewSuite(name, baseline string, variants []string) *Suite {
	return &Suite{Name: name, Baseline: baseline, Variants: variants, samples: map[Key]map[string][]float64{}}
}

// Add records measurements for a variant.
func (s *Suite) Add(variant string, ms []Measurement) {
	for _, m := range ms {
		k := Key{m.Name, m.Unit}
		byVar, ok := s.samples[k]
		if !ok {
			byVar = map[string][]float64{}
			s.samples[k] = byVar
			s.Keys = append(s.Keys, k)
		}
		byVar[variant] = append(byVar[variant], m.Value)
	}
}

// Stat summarises one variant's samples of one key.
type Stat struct {
	N                int
	Median, Min, Max float64
	// Ratio is Median over the baseline's median; NaN if either is missing
	// or the baseline's median is zero.
	Ratio float64
	// P is the Mann-Whitney U test's p-value against the baseline (1 when
	// there are too few samples to tell).
	P float64
}

// Stat returns the statistics of variant for key; ok is false if the
// variant has no samples for it.
func (s *Suite) Stat(k Key, variant string) (st Stat, ok bool) {
	vals := s.samples[k][variant]
	if len(vals) == 0 {
		return Stat{}, false
	}
	st = Stat{N: len(vals), Median: median(vals), Min: slices.Min(vals), Max: slices.Max(vals), Ratio: math.NaN(), P: 1}
	base := s.samples[k][s.Baseline]
	if len(base) == 0 {
		return st, true
	}
	if bm := median(base); bm != 0 {
		st.Ratio = st.Median / bm
	}
	if variant != s.Baseline {
		c := benchmath.AssumeNothing.Compare(
			benchmath.NewSample(base, &benchmath.DefaultThresholds),
			benchmath.NewSample(vals, &benchmath.DefaultThresholds))
		st.P = c.P
	}
	return st, true
}

func median(vals []float64) float64 {
	v := slices.Clone(vals)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Significant reports whether a p-value shows a difference at the level
// benchstat uses by default (alpha = 0.05).
func Significant(p float64) bool { return p <= 0.05 }
