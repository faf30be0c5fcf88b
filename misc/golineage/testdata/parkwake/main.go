// parkwake keeps 200 goroutines parking and waking: each sleeps 0.2 to 1.2 ms at
// the bottom of 10 frames of main.deep, over and over, while 100 more stay
// parked in a channel receive. It prints "ready" and waits for its
// standard input to close.
package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

var never = make(chan int)

//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}

//go:noinline
func churn(i int) {
	for {
		deep(10, func() { time.Sleep(time.Duration(200+i*5) * time.Microsecond) })
	}
}

//go:noinline
func parked() {
	deep(10, func() { <-never })
}

func main() {
	for i := 0; i < 200; i++ {
		go churn(i)
	}
	for i := 0; i < 100; i++ {
		go parked()
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
}
