// lprof is the program of lineageprofile_test.go: the server of issue 27
// (an acceptor starts connections, each connection starts crunchers, which
// allocate and burn a little CPU, the first one of each a helper, and half
// the connections exit; a janitor and its child work beside them), every
// goroutine parked at the end, and its own
// goroutine and goroutinecreate profiles written on request, so that the
// test can compare the creation chains the runtime appends (GODEBUG
// lineageprofile=1) with golineage's, read from outside in the same state.
//
// Each goroutine that stays labels itself (runtime/pprof labels) with its
// goid and the function it started in, so that the test finds it in both
// views. The program prints "goroutines N" (how many it left parked) and
// "ready" once they are all parked and the exiting connections are gone.
// Then each line "profile DIR" on standard input writes
// DIR/goroutine.pb.gz, DIR/goroutinecreate.pb.gz and DIR/allocs.pb.gz
// (every allocation sampled) and prints "profiled";
// end of input releases the goroutines and exits.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

const (
	conns    = 4
	crunches = 2 // crunchers per connection
)

var (
	release = make(chan struct{})
	parked  sync.WaitGroup
	sink    [][]byte
	sinkMu  sync.Mutex
)

// stay labels the calling goroutine, which started in start, and parks it
// until release.
func stay(start string) {
	buf := make([]byte, 64)
	goid := strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1]
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("goid", goid, "start", start)))
	parked.Done()
	<-release
}

//go:noinline
func acceptor() {
	for i := 0; i < conns; i++ {
		go conn(i) // through a wrapper: main.acceptor.gowrap1
	}
	stay("main.acceptor")
}

//go:noinline
func conn(i int) {
	startCrunchers(i)
	if i%2 == 0 {
		stay("main.conn")
	}
}

// startCrunchers makes the crunchers' creation stack (GODEBUG lineagestack)
// one frame deeper than the connection's start.
//
//go:noinline
func startCrunchers(i int) {
	for j := 0; j < crunches; j++ {
		go func() { // main.startCrunchers.func1
			cruncher(i*crunches+j, j == 0)
		}()
	}
}

//go:noinline
func cruncher(seed int, withHelper bool) {
	work(seed)
	if withHelper {
		go helper() // four go statements below main
	}
	stay("main.startCrunchers.func1")
}

//go:noinline
func helper() {
	work(-2)
	stay("main.helper")
}

//go:noinline
func janitor() {
	go func() { // main.janitor.func1
		stay("main.janitor.func1")
	}()
	work(-1)
	stay("main.janitor")
}

// work burns a little CPU and allocates.
//
//go:noinline
func work(seed int) {
	var bufs [][]byte
	for k := 0; k < 20; k++ {
		b := make([]byte, 1024+k*64)
		for i := range b {
			b[i] = byte(seed + i*k)
		}
		bufs = append(bufs, b)
	}
	sinkMu.Lock()
	sink = bufs
	sinkMu.Unlock()
}

func main() {
	runtime.MemProfileRate = 1 // every allocation is in the allocs profile
	// acceptor, the connections that stay, crunchers, their helpers,
	// janitor and its child.
	n := 1 + conns/2 + conns*crunches + conns + 2
	parked.Add(n)
	go acceptor()
	go janitor()
	parked.Wait()
	// The connections that exit may still be on their way out, and
	// the others between parked.Done and the receive: wait until the
	// goroutine count says the former are gone (main is one more) and
	// the goroutine dump that the latter wait on release (the dump's
	// header is "goroutine N [chan receive] {labels}:").
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(time.Minute)
	for {
		all, waiting := runtime.NumGoroutine(), strings.Count(string(buf[:runtime.Stack(buf, true)]), " [chan receive]")
		if all == n+1 && waiting == n {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "%d goroutines, %d waiting; want %d, %d\n", all, waiting, n+1, n)
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("goroutines %d\nready\n", n)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		dir, ok := strings.CutPrefix(sc.Text(), "profile ")
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown command %q\n", sc.Text())
			os.Exit(2)
		}
		for _, name := range []string{"goroutine", "goroutinecreate", "allocs"} {
			f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
			if err == nil {
				err = pprof.Lookup(name).WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		fmt.Println("profiled")
	}
	close(release)
}
