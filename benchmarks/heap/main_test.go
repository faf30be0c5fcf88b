// Package heap benchmarks the heap profiler: sampled allocation at several
// stack depths and profiling rates, the profiler's per-sample overhead, and
// allocation-heavy workloads at a MemProfileRate taken from the environment.
package heap

import (
	"fmt"
	"os"
	"testing"

	"fpsafe/benchmarks/internal/workload"
)

// rateLabel names the MemProfileRate the workload benchmarks run at.
var rateLabel string

func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(coldEnv); ok {
		if err := coldChildMain(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	var err error
	if rateLabel, err = workload.ApplyMemProfileRateEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
