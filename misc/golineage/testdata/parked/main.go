// parked parks goroutines in every common kind of wait (channel receive and
// send, select, sync.Mutex, sync.WaitGroup, sync.Cond, sleep) and in a chain
// of creators, prints the runtime's own traceback of all goroutines, then
// "ready", and waits for its standard input to close.
package main

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

var (
	work  = make(chan int)
	out   = make(chan int)
	stop  = make(chan struct{})
	other = make(chan int)
	mu    sync.Mutex
	wg    sync.WaitGroup
	cond  = sync.NewCond(&sync.Mutex{})
)

//go:noinline
func worker() {
	for range work {
	}
}

//go:noinline
func producer() { out <- 1 }

//go:noinline
func locker() {
	mu.Lock()
	mu.Unlock()
}

//go:noinline
func waiter() { wg.Wait() }

//go:noinline
func selector() {
	select {
	case <-stop:
	case <-other:
	}
}

//go:noinline
func sleeper() { time.Sleep(time.Hour) }

//go:noinline
func condWaiter() {
	cond.L.Lock()
	cond.Wait()
	cond.L.Unlock()
}

// chain creates a goroutine that creates the next, n deep; each waits on
// stop once its child exists.
//
//go:noinline
func chain(n int) {
	if n > 0 {
		go chain(n - 1)
	}
	<-stop
}

// waitParked waits until the runtime's own dump shows n goroutines created
// by main.main or main.chain in a wait.
func waitParked(n int) string {
	buf := make([]byte, 1<<20)
	for i := 0; ; i++ {
		d := string(buf[:runtime.Stack(buf, true)])
		parked := 0
		for _, b := range strings.Split(d, "\n\n") {
			if strings.Contains(b, "created by main.") && !strings.Contains(b, "[running") && !strings.Contains(b, "[runnable") {
				parked++
			}
		}
		if parked >= n || i > 5000 {
			return d
		}
		time.Sleep(time.Millisecond)
	}
}

func main() {
	mu.Lock()
	wg.Add(1)
	for i := 0; i < 3; i++ {
		go worker()
	}
	go producer()
	go locker()
	go locker()
	go waiter()
	go selector()
	go sleeper()
	go condWaiter()
	go chain(2)
	os.Stdout.WriteString(waitParked(13))
	os.Stdout.WriteString("\nready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}
