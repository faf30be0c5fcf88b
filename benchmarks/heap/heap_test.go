package heap

import (
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"fpsafe/benchmarks/internal/workload"
)

var depths = []int{8, 32, 128}

// rates are the MemProfileRate settings of BenchmarkAlloc64; 0 stands for
// the default (runtime.MemProfileRate's initial value, 512 KiB).
var rates = []int{1, 4096, 0}

// obj is the 64-byte object every allocation benchmark allocates.
type obj [64]byte

// setRate sets runtime.MemProfileRate for one benchmark and returns a
// function that restores it. It then allocates past the next sampling point
// so that the first timed allocations do not inherit the previous rate's
// sampling interval.
func setRate(rate int) (restore func()) {
	old := runtime.MemProfileRate
	if rate != 0 {
		runtime.MemProfileRate = rate
	}
	for range (2 << 20) / 64 {
		workload.Sink = new(obj)
	}
	return func() { runtime.MemProfileRate = old }
}

// BenchmarkAlloc64 allocates one 64-byte object per op from a stack of the
// given depth. With rate=1 every allocation is profiled, so the op is
// allocation plus the heap profiler's full per-sample path: the stack
// capture (mProf_Malloc's unwind), the bucket lookup and the profile
// record attached to the object.
func BenchmarkAlloc64(b *testing.B) {
	for _, depth := range depths {
		for _, rate := range rates {
			label := fmt.Sprint(rate)
			if rate == 0 {
				label = "default"
			}
			b.Run(fmt.Sprintf("depth=%d/rate=%s", depth, label), func(b *testing.B) {
				defer setRate(rate)()
				workload.AtDepth(depth, func() {
					b.ResetTimer()
					for range b.N {
						workload.Sink = new(obj)
					}
					b.StopTimer()
				})
			})
		}
	}
}

// BenchmarkStackCapture reports, as ns/op, the heap profiler's overhead on
// one sampled allocation at depth 32: the time of an allocation with
// MemProfileRate=1 minus the time of the same allocation with
// MemProfileRate=0, measured in alternating batches in the same benchmark
// so that both halves see the same machine state. Stack capture is the only
// part of that difference that grows with depth; the rest is the bucket
// lookup and the profile record. Part of the free-side cost (mProf_Free at
// sweep) can fall into either batch and is not isolated.
func BenchmarkStackCapture(b *testing.B) {
	b.Run("depth=32", func(b *testing.B) {
		old := runtime.MemProfileRate
		defer func() { runtime.MemProfileRate = old }()
		const batch = 512
		var profiled, plain time.Duration
		workload.AtDepth(32, func() {
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				n := min(batch, b.N-done)
				runtime.MemProfileRate = 1
				t0 := time.Now()
				for range n {
					workload.Sink = new(obj)
				}
				t1 := time.Now()
				runtime.MemProfileRate = 0
				for range n {
					workload.Sink = new(obj)
				}
				t2 := time.Now()
				profiled += t1.Sub(t0)
				plain += t2.Sub(t1)
			}
			b.StopTimer()
		})
		b.ReportMetric(float64(profiled-plain)/float64(b.N), "ns/op")
		b.ReportMetric(float64(plain)/float64(b.N), "unprofiled-ns/op")
	})
}

// BenchmarkCallers is a reference point, not a fork change: runtime.Callers
// at depth 32 unwinds with the slow unwinder in both toolchains. It shows
// what one slow 32-frame unwind costs on this machine.
func BenchmarkCallers(b *testing.B) {
	b.Run("depth=32", func(b *testing.B) {
		pcs := make([]uintptr, 64)
		workload.AtDepth(32, func() {
			b.ResetTimer()
			for range b.N {
				if runtime.Callers(1, pcs) != 32 {
					b.Fatal("wrong depth")
				}
			}
		})
	})
}

// BenchmarkGarbage and BenchmarkJSON run the workloads at the
// MemProfileRate of BENCH_MEMPROFILERATE (the sub-benchmark names it).
func BenchmarkGarbage(b *testing.B) {
	b.Run("rate="+rateLabel, func(b *testing.B) {
		g := workload.NewGarbage(16)
		b.ResetTimer()
		for range b.N {
			g.Step()
		}
	})
}

func BenchmarkJSON(b *testing.B) {
	b.Run("rate="+rateLabel, func(b *testing.B) {
		j := workload.NewJSON(5000)
		b.SetBytes(int64(j.Size()))
		b.ResetTimer()
		for range b.N {
			j.Step()
		}
	})
}

// BenchmarkLineageProfile is the workload of GODEBUG lineageprofile (see
// doc/godebug.md): one op is 16 allocations of 64 bytes at depth 32 in a
// goroutine three go statements below the benchmark, with heap sampling at
// the default rate, and with cpu=100hz a CPU profile running into
// io.Discard. Compare the fork with lineageprofile=0 and =1: with it,
// every heap and CPU sample carries the goroutine's go statements.
// (callgrind counts only cpu=off: it aborts on SIGPROF arriving in a
// signal handler.)
func BenchmarkLineageProfile(b *testing.B) {
	for _, cpu := range []bool{false, true} {
		name := "cpu=off"
		if cpu {
			name = "cpu=100hz"
		}
		b.Run(name, func(b *testing.B) {
			defer setRate(0)()
			if cpu {
				if err := pprof.StartCPUProfile(io.Discard); err != nil {
					b.Fatal(err)
				}
				defer pprof.StopCPUProfile()
			}
			done := make(chan struct{})
			spawnAt(3, func() {
				defer close(done)
				workload.AtDepth(32, func() {
					b.ResetTimer()
					for range b.N {
						for range 16 {
							workload.Sink = new(obj)
						}
					}
					b.StopTimer()
				})
			})
			<-done
		})
	}
}

// spawnAt runs f in a goroutine n go statements below the caller.
func spawnAt(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	go spawnAt(n-1, f)
}
