// many parks $MANY goroutines (default 200000) in a channel receive, 10
// frames deep, so that a read of every goroutine takes long enough to be
// interrupted in the middle. It prints "ready" once they are parked and
// waits for its standard input to close.
package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"time"
)

var block = make(chan int)

//go:noinline
func park(depth int) {
	if depth > 0 {
		park(depth - 1)
		return
	}
	<-block
}

func main() {
	n := 200000
	if s := os.Getenv("MANY"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for range n {
		go park(10)
	}
	for runtime.NumGoroutine() < n+1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the last ones reach their receive
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}
