package goprof

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"fpsafe/benchmarks/internal/workload"
)

// parkLoop parks on its own channel, parkedDepth frames deep, and each time
// it is woken signals done and parks again at the same place.
//
//go:noinline
func parkLoop(wake chan struct{}, done *sync.WaitGroup) {
	done.Done()
	for range wake {
		done.Done()
	}
}

// BenchmarkGoroutineProfileMoved is BenchmarkGoroutineProfile with
// goroutines that all ran since the previous profile: before each op every
// goroutine is woken and parks again (same stack, new status), so no
// goroutine's record can be reused from the previous call and every stack
// is walked again. Waking is outside the timed part.
func BenchmarkGoroutineProfileMoved(b *testing.B) {
	for _, n := range counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			var done sync.WaitGroup
			wakes := make([]chan struct{}, n)
			done.Add(n)
			for i := range wakes {
				wakes[i] = make(chan struct{})
				go workload.AtDepth(parkedDepth-2, func() { parkLoop(wakes[i], &done) })
			}
			done.Wait()
			wakeAll := func() {
				done.Add(n)
				for _, c := range wakes {
					c <- struct{}{}
				}
				done.Wait()
				// Let the last ones reach the channel receive.
				for range 10 {
					runtime.Gosched()
				}
			}
			defer func() {
				done.Add(n)
				for _, c := range wakes {
					close(c)
				}
			}()
			p := make([]runtime.StackRecord, n+1000)
			// thread-cpu-ns/op is the CPU time of the profiling thread
			// (the goroutine is locked to it): unlike ns/op, it leaves out
			// the time other processes hold the CPU, which on a shared
			// machine is most of the wall time.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				wakeAll()
				b.StartTimer()
				t0 := threadCPUTime(b)
				got, ok := runtime.GoroutineProfile(p)
				cpu += threadCPUTime(b) - t0
				if !ok || got < n {
					b.Fatalf("GoroutineProfile: %d records, ok=%v; want at least %d", got, ok, n)
				}
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "thread-cpu-ns/op")
		})
	}
}

// threadCPUTime is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
// exact to the nanosecond, unlike getrusage's accounting).
func threadCPUTime(b *testing.B) time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		b.Fatal(e)
	}
	return time.Duration(ts.Nano())
}
