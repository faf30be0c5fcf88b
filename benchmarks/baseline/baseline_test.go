// Package baseline runs the allocation workloads with nothing configured:
// the default MemProfileRate, no tracer, no profiler. It is the cost, or the
// absence of one, that the fork imposes on a program that profiles nothing.
// The harness adds a selection of the runtime package's own benchmarks to
// this suite.
package baseline

import (
	"testing"

	"fpsafe/benchmarks/internal/workload"
)

func BenchmarkGarbage(b *testing.B) {
	g := workload.NewGarbage(16)
	b.ResetTimer()
	for range b.N {
		g.Step()
	}
}

func BenchmarkJSON(b *testing.B) {
	j := workload.NewJSON(5000)
	b.SetBytes(int64(j.Size()))
	b.ResetTimer()
	for range b.N {
		j.Step()
	}
}
