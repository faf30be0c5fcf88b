package heap

import (
	"fmt"
	"testing"

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
