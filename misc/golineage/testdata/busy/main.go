// busy keeps 8 goroutines computing and reports its throughput: with -report
// it prints the number of work units done per second of wall time.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// counts holds each worker's completed units, one cache line each, so the
// measured period can start after the workers are running.
var counts [8]struct {
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
	for i := 0; i < 1000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func worker(id int, stop *atomic.Bool, wg *sync.WaitGroup) {
	defer wg.Done()
	var x uint64 = 1
	for !stop.Load() {
		x = work(x)
		counts[id].n.Add(1)
	}
	if x == 42 {
		fmt.Println(x)
	}
}

func main() {
	d := flag.Duration("d", 0, "run for this long, then print units/s (0: forever)")
	wait := flag.Bool("wait", false, "after printing ready, start the measured period when a line arrives on stdin")
	flag.Parse()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go worker(i, &stop, &wg)
	}
	fmt.Fprintln(os.Stdout, "ready")
	if *d == 0 {
		select {}
	}
	if *wait {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	base := total()
	start := time.Now()
	time.Sleep(*d)
	stop.Store(true)
	wg.Wait()
	fmt.Printf("units/s %.0f\n", float64(total()-base)/time.Since(start).Seconds())
}
