// labels parks goroutines with and without pprof labels (runtime/pprof.Do),
// prints "ready", and waits for its standard input to close.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

var stop = make(chan struct{})

//go:noinline
func labeled(ctx context.Context) { <-stop }

//go:noinline
func plain() { <-stop }

func main() {
	ready := make(chan bool)
	for i := range 2 {
		go pprof.Do(context.Background(), pprof.Labels("worker", fmt.Sprint(i), "role", "test \"q\""), func(ctx context.Context) {
			ready <- true
			labeled(ctx)
		})
		<-ready
	}
	go plain()
	fmt.Println("ready")
	os.Stdin.Read(make([]byte, 1))
}
