package heap

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"fpsafe/benchmarks/internal/workload"
)

// scalingGoroutines are the numbers of allocating goroutines of
// BenchmarkScaling, scalingProcs its GOMAXPROCS settings.
var (
	scalingGoroutines = []int{1, 2, 4, 8, 16}
	scalingProcs      = []int{1, 2}
)

// scalingDepth is the depth of the stack each allocating goroutine's loop
// runs at; the allocations come from a few frames further down.
const scalingDepth = 12

// scalingSink keeps each goroutine's last allocation live, one cache line
// apart so that the goroutines do not write to a shared line.
type scalingSink struct {
	p *obj
	_ [56]byte
}

var scalingSinks [16]scalingSink

// The allocation stacks of BenchmarkScaling: four call paths of two or
// three frames below the loop, so every goroutine allocates from the same
// handful of distinct stacks, as a program's hot allocation sites do. All
// goroutines' samples fall into the same four profile buckets.

//go:noinline
func allocA(s *scalingSink) { s.p = new(obj) }

//go:noinline
func allocB(s *scalingSink) { s.p = new(obj) }

//go:noinline
func viaA(s *scalingSink) { allocA(s) }

//go:noinline
func viaB(s *scalingSink) { allocB(s) }

//go:noinline
func viaAB(s *scalingSink) { viaA(s) }

// allocStack allocates one 64-byte object from the i-th of four stacks.
//
//go:noinline
func allocStack(i int, s *scalingSink) {
	switch i & 3 {
	case 0:
		allocA(s)
	case 1:
		viaA(s)
	case 2:
		viaB(s)
	default:
		viaAB(s)
	}
}

// BenchmarkScaling runs g goroutines that allocate 64-byte objects from a
// handful of stacks, with GOMAXPROCS p and MemProfileRate r (default, 4096,
// 1; the default is the baseline without profiling). One op is one
// allocation: b.N allocations are shared among the goroutines, so ns/op is
// wall time per allocation, and with two Ps and no serialization it halves
// against one P. cpu-ns/op is the process's CPU time per allocation, which
// grows with p only through contention (spinning on locks, cache lines
// moving between the CPUs). The profiler's share of the serialization is
// the growth of the profiled rates against the default rate's.
// lockwait-ns/op is the time goroutines spent blocked on runtime-internal
// locks (and sync mutexes, of which there are none in the timed part) per
// allocation, from runtime/metrics: the serialization itself, which CPU
// time shows only as far as waiters spin.
func BenchmarkScaling(b *testing.B) {
	for _, procs := range scalingProcs {
		for _, rate := range []int{0, 4096, 1} {
			label := fmt.Sprint(rate)
			if rate == 0 {
				label = "default"
			}
			for _, g := range scalingGoroutines {
				b.Run(fmt.Sprintf("procs=%d/rate=%s/goroutines=%d", procs, label, g), func(b *testing.B) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					defer setRate(rate)()
					runScaling(b, g)
				})
			}
		}
	}
}

// runScaling times b.N allocations shared among g goroutines, each
// allocating at scalingDepth frames from the four stacks in turn.
func runScaling(b *testing.B, g int) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(g)
	done.Add(g)
	for w := range g {
		n := b.N / g
		if w < b.N%g {
			n++
		}
		go workload.AtDepth(scalingDepth, func() {
			s := &scalingSinks[w]
			ready.Done()
			<-start
			for i := range n {
				allocStack(i, s)
			}
			done.Done()
		})
	}
	ready.Wait()
	runtime.GC()
	b.ResetTimer()
	cpu0, wait0 := workload.CPUTime(), lockWait()
	close(start)
	done.Wait()
	b.StopTimer()
	b.ReportMetric(float64(workload.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric((lockWait()-wait0)*1e9/float64(b.N), "lockwait-ns/op")
}

// lockWaitMetric is the runtime/metrics name of the cumulative time spent
// blocked on mutexes, the runtime's internal locks included.
const lockWaitMetric = "/sync/mutex/wait/total:seconds"

// lockWait reads lockWaitMetric, in seconds.
func lockWait() float64 {
	s := []metrics.Sample{{Name: lockWaitMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s[0].Value.Float64()
}

// TestScalingStacks checks that allocStack allocates from four distinct
// stacks, each seen by the heap profiler as its own bucket: the handful
// of stacks BenchmarkScaling means to share among its goroutines.
func TestScalingStacks(t *testing.T) {
	defer setRate(1)()
	var s scalingSink
	for i := range 400 {
		allocStack(i, &s)
	}
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	allocStackPC := reflect.ValueOf(allocStack).Pointer()
	stacks := 0
	for _, r := range recs {
		for _, pc := range r.Stack() {
			if f := runtime.FuncForPC(pc - 1); f != nil && f.Entry() == allocStackPC {
				stacks++
				if r.AllocObjects < 100 {
					t.Errorf("stack %v: %d allocations, want 100", r.Stack(), r.AllocObjects)
				}
				break
			}
		}
	}
	if stacks != 4 {
		t.Errorf("allocStack allocated from %d stacks, want 4", stacks)
	}
}
