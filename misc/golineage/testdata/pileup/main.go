// pileup parks thousands of goroutines on each of a few locks: N on one
// sync.Mutex (the fetchers, started as `go fetch(url, i)`, through a
// compiler wrapper), N on one sync.WaitGroup, N readers of one
// sync.RWMutex blocked behind its writer (itself blocked behind a reader
// that holds the lock), and CHANS on one channel; N and CHANS are
// $PILEUP_N (default 3000) and $PILEUP_CHANS (default 300). Then it prints the
// runtime's own traceback of all goroutines, "ready", and waits for its
// standard input to close.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	mu   sync.Mutex
	wg   sync.WaitGroup
	rw   sync.RWMutex
	work = make(chan int)
)

//go:noinline
func fetch(url string, i int) {
	mu.Lock()
	defer mu.Unlock()
	_ = fmt.Sprint(url, i)
}

//go:noinline
func waiter() { wg.Wait() }

//go:noinline
func writer() {
	rw.Lock()
	rw.Unlock()
}

//go:noinline
func reader() {
	rw.RLock()
	rw.RUnlock()
}

//go:noinline
func worker() {
	for range work {
	}
}

// waitParked waits until the runtime's own dump shows n goroutines created
// by main.main in a wait, and returns the dump.
func waitParked(n int) string {
	buf := make([]byte, 64<<20)
	for {
		d := string(buf[:runtime.Stack(buf, true)])
		parked := 0
		for _, b := range strings.Split(d, "\n\n") {
			if strings.Contains(b, "created by main.main") && !strings.Contains(b, "[running") && !strings.Contains(b, "[runnable") {
				parked++
			}
		}
		if parked >= n {
			return d
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// envInt is the number in $name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func main() {
	n, chans := envInt("PILEUP_N", 3000), envInt("PILEUP_CHANS", 300)
	mu.Lock()
	wg.Add(1)
	rw.RLock()
	parked := 0
	if n > 0 {
		go writer()
		parked++
		waitParked(parked) // the writer waits: the readers queue behind it
	}
	for i := 0; i < n; i++ {
		go fetch("https://example.com/", i)
		go waiter()
		go reader()
	}
	for i := 0; i < chans; i++ {
		go worker()
	}
	parked += 3*n + chans
	os.Stdout.WriteString(waitParked(parked))
	fmt.Printf("\ngoroutines %d\nready\n", runtime.NumGoroutine())
	bufio.NewReader(os.Stdin).ReadString('\n')
}
