package main

import (
	"testing"

	"fpsafe.dev/misc/golineage/internal/pprofout"
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
