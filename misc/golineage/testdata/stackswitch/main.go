// stackswitch loops, on three goroutines, in functions that switch to the
// system stack: time.Now (time.now, then the vDSO's clock_gettime),
// runtime.Gosched (runtime.mcall) and runtime.Stack (runtime.systemstack).
// It prints "ready" and runs until its standard input closes.
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

var sink [3]int64

//go:noinline
func now() int64 { return time.Now().UnixNano() }

func nowLoop() {
	for {
		sink[0] += now()
	}
}

func goschedLoop() {
	for {
		runtime.Gosched()
		sink[1]++
	}
}

func stackLoop() {
	buf := make([]byte, 1024)
	for {
		sink[2] += int64(runtime.Stack(buf, false))
	}
}

func main() {
	go nowLoop()
	go goschedLoop()
	go stackLoop()
	fmt.Println("ready")
	os.Stdin.Read(make([]byte, 1))
}
