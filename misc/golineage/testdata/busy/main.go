// busy keeps 8 goroutines computing and reports its throughput: with -report
// it prints the number of work units done per second of wall time.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

var total atomic.Int64

//go:noinline
func work(x uint64) uint64 {
	for i := 0; i < 1000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func worker(stop *atomic.Bool, wg *sync.WaitGroup) {
	defer wg.Done()
	var x uint64 = 1
	n := int64(0)
	for !stop.Load() {
		x = work(x)
		n++
	}
	total.Add(n)
	if x == 42 {
		fmt.Println(x)
	}
}

func main() {
	d := flag.Duration("d", 0, "run for this long, then print units/s (0: forever)")
	flag.Parse()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go worker(&stop, &wg)
	}
	fmt.Fprintln(os.Stdout, "ready")
	if *d == 0 {
		select {}
	}
	start := time.Now()
	time.Sleep(*d)
	stop.Store(true)
	wg.Wait()
	fmt.Printf("units/s %.0f\n", float64(total.Load())/time.Since(start).Seconds())
}
