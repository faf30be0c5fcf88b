// Package sched benchmarks goroutine switches and creation, the paths that
// goroutine lineage touches: a fork that records lineage at every switch or
// every `go` statement pays for it here.
package sched

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"fpsafe/benchmarks/internal/workload"
)

// BenchmarkChanPingPong is one round trip (two goroutine switches) between
// two goroutines over unbuffered channels per op.
func BenchmarkChanPingPong(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	b.ResetTimer()
	for i := range b.N {
		ping <- i
		<-pong
	}
	b.StopTimer()
	close(ping)
	<-pong
}

// BenchmarkPingPongHog measures switches on one P while a CPU-bound
// goroutine competes for it, like the runtime's own BenchmarkPingPongHog:
// the ping-pong pair hands the P back and forth through runnext, and the
// hog runs only when preempted in. One op is one round trip.
func BenchmarkPingPongHog(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	hogDone := make(chan struct{})
	go func() {
		for !stop.Load() {
			for i := 0; i < 1000; i++ {
				workload.Sink = nil
			}
		}
		close(hogDone)
	}()
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	// Let the hog start and be preempted at least once.
	runtime.Gosched()
	b.ResetTimer()
	for i := range b.N {
		ping <- i
		<-pong
	}
	b.StopTimer()
	close(ping)
	<-pong
	stop.Store(true)
	<-hogDone
}

// BenchmarkCreateGoroutine creates one goroutine per op from a 20-deep
// stack; the goroutines do nothing, and the timer stops once all have
// exited. Upstream's GODEBUG=tracebackancestors=N unwinds the creating
// stack at every `go`, so its cost grows with this depth.
func BenchmarkCreateGoroutine(b *testing.B) {
	b.Run("depth=20", func(b *testing.B) {
		workload.AtDepth(20, func() {
			b.ResetTimer()
			createBatches(b.N)
			b.StopTimer()
		})
	})
}

// createBatches creates n goroutines from the caller's stack, in batches
// so that at most createBatch of them exist at once.
func createBatches(n int) {
	var wg sync.WaitGroup
	for done := 0; done < n; done += createBatch {
		k := min(createBatch, n-done)
		wg.Add(k)
		for range k {
			go wg.Done()
		}
		wg.Wait()
	}
}

const createBatch = 64

// BenchmarkCreateGoroutineFanOut starts all b.N goroutines before any of
// them can finish (they wait on a gate), so every go statement takes a g
// struct that has never run a goroutine, as in a server's burst or a
// fan-out: the g struct's first lineage record, not the reuse of one.
// One op is one go statement, the goroutine's first run up to its park on
// the gate, its wake-up when the gate opens, and its exit.
func BenchmarkCreateGoroutineFanOut(b *testing.B) {
	startParked(b.N)()
}

// startParked starts n goroutines that wait on a gate, returns once all of
// them have run up to the gate, and returns the function that opens the
// gate and waits for all of them to finish.
//
// Waiting for all of them makes every goroutine park on the gate: without
// the wait, how many of them run before the gate opens (and so park, and
// are woken by close) depends on when sysmon preempts the creating loop,
// and a run's instructions per op fell anywhere between about 3,000 (few
// parked) and 4,400 (all parked) under callgrind.
func startParked(n int) (release func()) {
	gate := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		go func() {
			started.Done()
			<-gate
			done.Done()
		}()
	}
	started.Wait()
	return func() {
		close(gate)
		done.Wait()
	}
}

// BenchmarkParkedGoroutineMemory reports the memory the runtime obtains
// from the OS per parked goroutine (memstats.Sys before and after starting
// b.N goroutines blocked in a channel receive): the goroutine's g struct,
// stack and, on the fork, its lineage record. ns/op is meaningless here.
func BenchmarkParkedGoroutineMemory(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	release := startParked(b.N)
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Sys-before.Sys)/float64(b.N), "sys-B/goroutine")
	b.ReportMetric(float64(after.OtherSys-before.OtherSys)/float64(b.N), "othersys-B/goroutine")
	release()
}

// BenchmarkCreateGoroutineChain measures lineage bookkeeping across
// generations: each op is a goroutine that starts the next one, so every
// creation happens in a goroutine that is itself a descendant, up to b.N
// generations deep.
func BenchmarkCreateGoroutineChain(b *testing.B) {
	done := make(chan struct{})
	var step func(n int)
	step = func(n int) {
		if n == 0 {
			close(done)
			return
		}
		go step(n - 1)
	}
	b.ResetTimer()
	go step(b.N)
	<-done
}
