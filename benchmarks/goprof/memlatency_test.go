package goprof

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// line is one 64-byte cache line of the pointer chase.
type line struct {
	next *line
	_    [56]byte
}

// chaseRing links n cache lines into one cycle in a random order, so that
// each load depends on the previous one and the hardware prefetchers
// cannot guess the next line.
func chaseRing(n int) *line {
	lines := make([]line, n)
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for i, j := range order {
		lines[j].next = &lines[order[(i+1)%n]]
	}
	return &lines[order[0]]
}

var chaseSink *line

// BenchmarkMemLatency measures the latency of a dependent load: one op is
// one load in a random cycle through size bytes of cache lines, so each
// load waits for the previous one and the prefetchers cannot guess the
// next line. At 32 KiB the loads hit L1, at 8 MiB the last-level cache
// (when other jobs leave it alone); at 64 MiB (about the stacks of
// 10,000 goroutines) and 256 MiB, far beyond the last-level cache, they
// miss to DRAM, most with a TLB miss too: the latency against which
// walking thousands of cold goroutine stacks is bound. On a shared machine
// read cpu-ns/op, the CPU time per load: ns/op also counts the time other
// jobs hold the CPU. A reference for the machine, not a fork change.
func BenchmarkMemLatency(b *testing.B) {
	for _, size := range []int{32 << 10, 1 << 20, 8 << 20, 64 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			p := chaseRing(size / 64)
			// One lap to fault the pages in and warm what fits.
			for range size / 64 {
				p = p.next
			}
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for range b.N {
				p = p.next
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			chaseSink = p
		})
	}
}

// TestChaseRing checks that chaseRing's lines form one cycle through all
// of them, so that the benchmark's loads visit every line.
func TestChaseRing(t *testing.T) {
	const n = 1000
	start := chaseRing(n)
	seen := make(map[*line]bool)
	p := start
	for range n {
		if seen[p] {
			t.Fatalf("line visited twice after %d steps", len(seen))
		}
		seen[p] = true
		p = p.next
	}
	if p != start {
		t.Fatalf("after %d steps the chase is not back at its start", n)
	}
}
