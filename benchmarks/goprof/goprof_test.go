// Package goprof benchmarks goroutine profiling: runtime.GoroutineProfile
// and github.com/felixge/fgprof's sampling, with 1,000 and 10,000
// goroutines parked 22 frames deep.
package goprof

import (
	"bufio"
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/felixge/fgprof"

	"fpsafe/benchmarks/internal/workload"
)

var counts = []int{1000, 10000}

// parkedDepth is the depth of each parked goroutine's stack as the
// goroutine profile records it: 19 frames from parkHere down to goexit,
// plus runtime.chanrecv1, runtime.chanrecv and runtime.gopark.
const parkedDepth = 22

// parkHere is the leaf frame of every parked goroutine; the fgprof
// benchmark counts samples by finding it in the folded output.
//
//go:noinline
func parkHere(ready *sync.WaitGroup, stop chan struct{}) {
	ready.Done()
	<-stop
}

// park starts n goroutines parked parkedDepth frames deep and returns a
// function that releases them and waits until they have exited.
func park(n int) (release func()) {
	var ready, exited sync.WaitGroup
	stop := make(chan struct{})
	ready.Add(n)
	exited.Add(n)
	for range n {
		go func() {
			defer exited.Done()
			workload.AtDepth(parkedDepth-3, func() { parkHere(&ready, stop) })
		}()
	}
	ready.Wait()
	// Let the last ones reach the channel receive.
	for range 10 {
		runtime.Gosched()
	}
	time.Sleep(10 * time.Millisecond)
	return func() {
		close(stop)
		exited.Wait()
	}
}

func BenchmarkGoroutineProfile(b *testing.B) {
	for _, n := range counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			defer park(n)()
			p := make([]runtime.StackRecord, n+1000)
			b.ResetTimer()
			for range b.N {
				got, ok := runtime.GoroutineProfile(p)
				if !ok || got < n {
					b.Fatalf("GoroutineProfile: %d records, ok=%v; want at least %d", got, ok, n)
				}
			}
		})
	}
}

// fgprofWindow is how long each op lets fgprof sample.
const fgprofWindow = 250 * time.Millisecond

// BenchmarkFgprof runs fgprof for fgprofWindow per op (it samples at 99 Hz
// when it can keep up) and reports, as ns/op, the process's CPU time per
// sample taken: everything fgprof costs the program per sample, the
// goroutine profile and its own aggregation. samples/s shows whether it
// kept up with 99 Hz. Wall time per op is fgprofWindow by construction and
// is not reported.
func BenchmarkFgprof(b *testing.B) {
	for _, n := range counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			defer park(n)()
			var cpu time.Duration
			var samples int
			var wall time.Duration
			b.ResetTimer()
			for range b.N {
				var out bytes.Buffer
				c0, t0 := cpuTime(b), time.Now()
				stop := fgprof.Start(&out, fgprof.FormatFolded)
				time.Sleep(fgprofWindow)
				if err := stop(); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - c0
				wall += time.Since(t0)
				s, err := countSamples(&out, n)
				if err != nil {
					b.Fatal(err)
				}
				samples += s
			}
			b.StopTimer()
			if samples == 0 {
				b.Fatal("fgprof took no samples")
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(samples), "ns/op")
			b.ReportMetric(float64(samples)/wall.Seconds(), "samples/s")
		})
	}
}

// countSamples reads fgprof's folded output (one "f1;f2;... count" line per
// distinct stack) and returns how many samples it holds: the parked
// goroutines all share one stack ending in parkHere, seen n times a sample.
func countSamples(out *bytes.Buffer, n int) (int, error) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	total := 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, ".parkHere") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		c, err := strconv.Atoi(line[i+1:])
		if err != nil {
			return 0, fmt.Errorf("fgprof folded line %q: %v", line, err)
		}
		total += c
	}
	if total%n != 0 {
		return 0, fmt.Errorf("fgprof saw parkHere %d times, not a multiple of %d goroutines", total, n)
	}
	return total / n, sc.Err()
}

// cpuTime is the process's user plus system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
