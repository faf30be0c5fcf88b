// offcpu runs two goroutines that compute under pprof labels and parks
// others, some with labels, under a creator goroutine: a target whose
// on-CPU and off-CPU profiles both have labels and lineage. It prints
// "ready", then runs until its standard input closes.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

var stop = make(chan struct{})

//go:noinline
func spin(x uint64) uint64 {
	for i := 0; i < 1000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func compute(ctx context.Context) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		x = spin(x)
	}
}

//go:noinline
func waitLabeled(ctx context.Context) { <-stop }

//go:noinline
func waitPlain() { <-stop }

// pool starts the parked goroutines: its own go statements are their
// creation sites, below main's.
//
//go:noinline
func pool(ready chan<- bool) {
	for i := range 3 {
		go pprof.Do(context.Background(), pprof.Labels("pool", fmt.Sprint(i)), func(ctx context.Context) {
			ready <- true
			waitLabeled(ctx)
		})
	}
	go func() {
		ready <- true
		waitPlain()
	}()
	ready <- true
	<-stop
}

func main() {
	ready := make(chan bool)
	for i := range 2 {
		go pprof.Do(context.Background(), pprof.Labels("worker", fmt.Sprint(i)), func(ctx context.Context) {
			ready <- true
			compute(ctx)
		})
	}
	go pool(ready)
	for range 2 + 3 + 1 + 1 {
		<-ready
	}
	fmt.Println("ready")
	os.Stdin.Read(make([]byte, 1))
	close(stop)
}
