// Package trace benchmarks programs while the execution tracer runs into
// io.Discard: the allocation workloads, and the scheduler operations whose
// trace events carry stacks (goroutine creation, blocking on a channel).
package trace

import (
	"io"
	"runtime/trace"
	"sync"
	"testing"

	"fpsafe/benchmarks/internal/workload"
)

// traced runs f with the tracer on; starting and stopping it is not timed.
func traced(b *testing.B, f func()) {
	if err := trace.Start(io.Discard); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	f()
	b.StopTimer()
	trace.Stop()
}

func BenchmarkGarbage(b *testing.B) {
	g := workload.NewGarbage(16)
	traced(b, func() {
		for range b.N {
			g.Step()
		}
	})
}

func BenchmarkJSON(b *testing.B) {
	j := workload.NewJSON(5000)
	b.SetBytes(int64(j.Size()))
	traced(b, func() {
		for range b.N {
			j.Step()
		}
	})
}

// BenchmarkCreateGoroutine creates a goroutine per op from a 20-deep stack;
// the tracer records the creation stack of each.
func BenchmarkCreateGoroutine(b *testing.B) {
	b.Run("depth=20", func(b *testing.B) {
		workload.AtDepth(20, func() {
			traced(b, func() { createBatches(b.N) })
		})
	})
}

// BenchmarkChanPingPong is one round trip between two goroutines over
// unbuffered channels per op; each block and unblock is a trace event with
// a stack.
func BenchmarkChanPingPong(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	traced(b, func() {
		for i := range b.N {
			ping <- i
			<-pong
		}
	})
	close(ping)
	<-pong
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
