// Command spin is a pure-Go program that keeps the CPU busy in nested
// calls, goroutines and the garbage collector for one second. fpcheck's
// golden test of the perf report checks a perf script recorded from it.
package main

import (
	"fmt"
	"sync"
	"time"
)

var sink []byte

//go:noinline
func leaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

//go:noinline
func nest(depth, n int) int {
	if depth == 0 {
		return leaf(n)
	}
	return nest(depth-1, n) + 1
}

func main() {
	stop := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	total := make([]int, 4)
	for w := range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				total[w] += nest(8, 10000)
				sink = make([]byte, 64<<10)
			}
		}()
	}
	wg.Wait()
	fmt.Println("spin: done", len(total))
}
