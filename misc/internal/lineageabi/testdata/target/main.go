// target is a running program for the file/memory header check: it parks a
// goroutine with pprof labels, prints "ready", and waits for its standard
// input to close.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
	ready := make(chan bool)
	go pprof.Do(context.Background(), pprof.Labels("check", "file-vs-memory"), func(context.Context) {
		ready <- true
		select {}
	})
	<-ready
	fmt.Println("ready")
	os.Stdin.Read(make([]byte, 1))
}
