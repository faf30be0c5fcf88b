package heap

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"fpsafe/benchmarks/internal/workload"
)

// treeDepth is the depth of the tree BenchmarkTree builds: 2^(treeDepth+1)-1
// nodes, each allocated from its own call stack.
const treeDepth = 12

// node is a 64-byte tree node.
type node struct {
	l, r *node
	v    [6]int64
}

// buildTree builds a complete binary tree of depth d. Its two recursive
// call sites make the stack of every node distinct, as parsers and tree
// walkers make it: at depth 12, 8191 allocation stacks per tree.
//
//go:noinline
func buildTree(d int) *node {
	n := new(node)
	if d > 0 {
		n.l = buildTree(d - 1)
		n.r = buildTree(d - 1)
	}
	return n
}

// BenchmarkTree builds one tree per op at the given MemProfileRate (0 is
// the default). The heap profiler's cost on a workload with thousands of
// distinct stacks is the time at rate=4096 minus the time at the default
// rate: a profile bucket per stack, looked up on each sample and flushed
// at each garbage collection.
func BenchmarkTree(b *testing.B) {
	for _, rate := range []int{0, 4096} {
		label := fmt.Sprint(rate)
		if rate == 0 {
			label = "default"
		}
		b.Run(fmt.Sprintf("depth=%d/rate=%s", treeDepth, label), func(b *testing.B) {
			defer setRate(rate)()
			// Build enough trees first that every stack has its bucket, as in
			// a long-running program.
			for range 256 {
				workload.Sink = buildTree(treeDepth)
			}
			b.ResetTimer()
			for range b.N {
				workload.Sink = buildTree(treeDepth)
			}
		})
	}
}

// treeCostRound is the number of trees BenchmarkTreeCost builds at one
// rate before it switches to the other: several collections' worth, so
// that each round pays its share of them.
const treeCostRound = 128

// median returns the median of x, which it sorts.
func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}

// BenchmarkTreeCost measures the heap profiler's cost on the tree of
// BenchmarkTree directly: it alternates rounds of trees at the default
// rate and at rate 4096 in one process and reports the difference per
// tree, in wall time (profile-ns/op) and in the process's CPU time on all
// threads (profile-cpu-ns/op, which holds the collector's share). Pairing
// the rounds cancels most of the drift of a shared machine, which the
// difference of two separate BenchmarkTree results keeps; the metrics are
// medians over the pairs. An op is one tree at each rate. The trees come
// from three call sites (the warm-up below and pairedRounds' two loops),
// so the profile holds three times the stacks of one tree: about 24,600
// at depth 12.
func BenchmarkTreeCost(b *testing.B) {
	for _, depth := range []int{9, 10, 12} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			def := runtime.MemProfileRate
			defer func() { runtime.MemProfileRate = def }()
			// Every stack has its bucket first, as in a long-running program.
			runtime.MemProfileRate = 4096
			for range 256 {
				workload.Sink = buildTree(depth)
			}
			// Trees at the new rate first, 2 MB of them, move the sampling
			// point to it.
			pairedRounds(b, def, treeCostRound, max(4, (2<<20)>>(depth+7)), func() { workload.Sink = buildTree(depth) })
		})
	}
}

// pairedRounds runs b.N calls of build in pairs of rounds of up to round
// calls, one at the default rate def and one at rate 4096, each after warm
// calls at its rate outside the timer, and reports the medians over the
// pairs of the difference per call, in wall time (profile-ns/op) and in
// the process's CPU time (profile-cpu-ns/op). Medians: a round that a
// burst of other work on the machine slowed does not move them.
func pairedRounds(b *testing.B, def, round, warm int, build func()) {
	var wallDiff, cpuDiff []float64
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(round, b.N-done)
		var wall, cpu [2]time.Duration
		for i, rate := range []int{def, 4096} {
			b.StopTimer()
			runtime.MemProfileRate = rate
			for range warm {
				build()
			}
			b.StartTimer()
			t0, c0 := time.Now(), workload.CPUTime()
			for range n {
				build()
			}
			wall[i] += time.Since(t0)
			cpu[i] += workload.CPUTime() - c0
		}
		wallDiff = append(wallDiff, float64(wall[1]-wall[0])/float64(n))
		cpuDiff = append(cpuDiff, float64(cpu[1]-cpu[0])/float64(n))
		done += n
	}
	b.ReportMetric(median(wallDiff), "profile-ns/op")
	b.ReportMetric(median(cpuDiff), "profile-cpu-ns/op")
}
