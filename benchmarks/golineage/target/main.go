// Command target is what the golineage benchmarks read and profile: it parks
// -parked goroutines in a channel receive, -depth frames deep, and keeps
// -workers goroutines busy counting work units. It prints "ready" once the
// goroutines are parked and the workers run; each line then read from
// standard input starts a measured period of -d, after which it prints the
// units done per second of wall time ("ops/s N"). It exits when its
// standard input closes.
//
// With -fgprof 99 it runs github.com/felixge/fgprof (which samples at a
// fixed 99 Hz) for its whole life; with another rate it runs fgprof's
// sampling loop (runtime.GoroutineProfile into a reused buffer, each
// distinct stack counted) at that rate.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/felixge/fgprof"

	"fpsafe/benchmarks/internal/workload"
)

// counts holds each worker's completed units, one cache line each.
var counts [64]struct {
	n atomic.Int64
	_ [56]byte
}

func total() int64 {
	var t int64
	for i := range counts {
		t += counts[i].n.Load()
	}
	return t
}

//go:noinline
func work(x uint64) uint64 {
	for range 1000 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func worker(id int) {
	var x uint64 = 1
	for {
		x = work(x)
		counts[id].n.Add(1)
		if x == 42 {
			fmt.Println(x)
		}
	}
}

//go:noinline
func parkHere(ready *sync.WaitGroup, stop chan struct{}) {
	ready.Done()
	<-stop
}

// sampleLoop is fgprof's sampling loop at hz.
func sampleLoop(hz int) {
	var stacks []runtime.StackRecord
	seen := map[[32]uintptr]int{}
	for range time.Tick(time.Second / time.Duration(hz)) {
		for {
			n, ok := runtime.GoroutineProfile(stacks)
			if ok {
				for _, s := range stacks[:n] {
					seen[s.Stack0]++
				}
				break
			}
			stacks = make([]runtime.StackRecord, int(float64(n)*1.1))
		}
	}
}

func main() {
	parked := flag.Int("parked", 10000, "goroutines parked in a channel receive")
	depth := flag.Int("depth", 20, "frames of each parked goroutine, from its receive down to goexit")
	workers := flag.Int("workers", 0, "busy goroutines")
	d := flag.Duration("d", 3*time.Second, "measured period")
	fg := flag.Int("fgprof", 0, "in-process fgprof at this rate (0: none; 99: fgprof.Start)")
	flag.Parse()

	var ready sync.WaitGroup
	stop := make(chan struct{})
	ready.Add(*parked)
	for range *parked {
		go workload.AtDepth(*depth, func() { parkHere(&ready, stop) })
	}
	ready.Wait()
	for range 10 {
		runtime.Gosched()
	}
	time.Sleep(10 * time.Millisecond)
	for i := range *workers {
		go worker(i)
	}
	switch {
	case *fg == 99:
		defer fgprof.Start(io.Discard, fgprof.FormatFolded)()
	case *fg > 0:
		go sampleLoop(*fg)
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		t0, n0 := time.Now(), total()
		time.Sleep(*d)
		n1, t1 := total(), time.Now()
		fmt.Printf("ops/s %.1f\n", float64(n1-n0)/t1.Sub(t0).Seconds())
	}
}
