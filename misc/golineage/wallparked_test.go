package main

import (
	"slices"
	"testing"
	"time"

	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/gobin/gobintest"
)

// TestWallParkedCounts: a parked goroutine's sample counts once for every
// tick it was in the set, except the ticks whose read failed and those in
// which the goroutine was also sampled on a thread.
func TestWallParkedCounts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		since, leave int   // ticks: joined, left (0: still in at the flush)
		ticks        int   // ticks at the flush
		missed       []int // ticks whose read failed
		onCPU        int
		want         int
	}{
		{"three ticks", 1, 4, 5, nil, 0, 3},
		{"one missed inside", 1, 4, 5, []int{2}, 0, 2},
		{"missed outside", 2, 4, 6, []int{1, 4, 5}, 0, 2},
		{"on a thread once", 1, 4, 5, nil, 1, 2},
		{"to the flush", 2, 0, 5, []int{3}, 0, 3},
		{"never counted", 3, 4, 5, []int{3}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := pprofout.New(nil, 0, 0)
			s := &pprofout.Sample{Goid: 7, PCs: []uint64{0x1000}}
			w := &wallParked{since: map[*pprofout.Sample]int{s: tc.since}, byGoid: map[uint64]*pprofout.Sample{7: s},
				onCPU: map[*pprofout.Sample]int{s: tc.onCPU}, missed: tc.missed, ticks: tc.ticks}
			if tc.leave > 0 {
				w.close(s, tc.leave, b)
				if len(w.since) != 0 || len(w.byGoid) != 0 || len(w.onCPU) != 0 {
					t.Errorf("the sample is still in the set after close: %v %v %v", w.since, w.byGoid, w.onCPU)
				}
			}
			w.flush(b)
			if b.Len() != tc.want {
				t.Errorf("%d samples, want %d", b.Len(), tc.want)
			}
		})
	}
}

// TestWallParkedWeights: a parked goroutine's sample stands for the time
// the ticks it was in covered, which is more than the period for a tick
// that came late; the ticks whose read failed, and those in which it was
// also on a thread, count for none of it.
func TestWallParkedWeights(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name    string
		weights []time.Duration // of ticks 1, 2, ...
		missed  []int
		onCPU   []int // ticks it was also on a thread
		count   int64
		want    time.Duration
	}{
		{"on time", []time.Duration{10 * ms, 10 * ms, 10 * ms}, nil, nil, 3, 30 * ms},
		{"one late tick", []time.Duration{10 * ms, 70 * ms, 10 * ms}, nil, nil, 3, 90 * ms},
		{"the late tick missed", []time.Duration{10 * ms, 70 * ms, 10 * ms}, []int{2}, nil, 2, 20 * ms},
		{"on a thread in the late tick", []time.Duration{10 * ms, 70 * ms, 10 * ms}, nil, []int{2}, 2, 20 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := pprofout.New(gobintest.OpenSelf(t), 0, 10*ms)
			s := &pprofout.Sample{Goid: 7, PCs: []uint64{0x1000}}
			w := &wallParked{since: map[*pprofout.Sample]int{s: 1}, byGoid: map[uint64]*pprofout.Sample{7: s},
				onCPU: map[*pprofout.Sample]int{}, onCPUd: map[*pprofout.Sample]time.Duration{}, covered: []time.Duration{0}}
			for i, d := range tc.weights {
				tick := i + 1
				w.ticks = tick
				w.covered = append(w.covered, w.covered[len(w.covered)-1]+d)
				if slices.Contains(tc.missed, tick) {
					w.missed = append(w.missed, tick)
				}
				if slices.Contains(tc.onCPU, tick) {
					w.onCPU[s]++
					w.onCPUd[s] += d
				}
			}
			w.flush(b)
			p := b.Profile()
			if len(p.Sample) != 1 || p.Sample[0].Value[0] != tc.count || time.Duration(p.Sample[0].Value[1]) != tc.want {
				var got [][]int64
				for _, s := range p.Sample {
					got = append(got, s.Value)
				}
				t.Errorf("samples %v, want one of %d ticks, %v", got, tc.count, tc.want)
			}
		})
	}
}
