// tree runs a known goroutine tree: main starts a server, the server starts
// handlers, handlers start workers, workers start leaves (four levels below
// main). The server, one handler and some workers exit once their children
// run, so those leaves' lineage outlives their ancestors. Every goroutine
// prints what the runtime says of it (runtime.Stack: its id and its "created
// by" line); leaves then alternate a short spin (in main.spin) with a
// nanosleep system call (in main.nap) forever, so at any moment several of
// them are on threads. After all leaves have started it prints "ready".
//
// Output lines:
//
//	node GOID PARENT FUNC FILE:LINE   (from runtime.Stack's "created by")
//	leaf GOID
//	ready
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	mu     sync.Mutex
	out    = bufio.NewWriter(os.Stdout)
	leaves sync.WaitGroup
)

// self reports this goroutine's id and its creator as runtime.Stack prints
// them.
func self() (goid uint64) {
	buf := make([]byte, 4096)
	s := string(buf[:runtime.Stack(buf, false)])
	first := strings.Fields(strings.SplitN(s, "\n", 2)[0])
	goid, _ = strconv.ParseUint(first[1], 10, 64)
	i := strings.Index(s, "\ncreated by ")
	if i < 0 {
		return goid
	}
	lines := strings.Split(s[i+1:], "\n")
	// "created by main.handler in goroutine 7" / "\t/path/main.go:55 +0x8f"
	by := strings.Fields(strings.TrimPrefix(lines[0], "created by "))
	pos := strings.Fields(lines[1])[0]
	mu.Lock()
	fmt.Fprintf(out, "node %d %s %s %s\n", goid, by[len(by)-1], by[0], pos)
	mu.Unlock()
	return goid
}

//go:noinline
func spin(n int) int {
	x := 0
	for i := 0; i < n; i++ {
		x += i * i
	}
	return x
}

//go:noinline
func nap() {
	ts := syscall.Timespec{Nsec: 2e6}
	syscall.Nanosleep(&ts, nil)
}

func leaf(ready *sync.WaitGroup) {
	g := self()
	mu.Lock()
	fmt.Fprintf(out, "leaf %d\n", g)
	mu.Unlock()
	ready.Done()
	leaves.Done()
	for {
		spin(200000)
		nap()
	}
}

func worker(id int, exit bool) {
	self()
	var ready sync.WaitGroup
	n := 1 + id%2
	ready.Add(n)
	for i := 0; i < n; i++ {
		go leaf(&ready)
	}
	ready.Wait()
	if !exit {
		select {}
	}
}

func handler(id int) {
	self()
	for i := 0; i < 2; i++ {
		go worker(2*id+i, i == 0)
	}
	if id == 0 {
		return // a parent that exits before its descendants
	}
	select {}
}

func server() {
	self()
	for i := 0; i < 2; i++ {
		go handler(i)
	}
}

func main() {
	self()
	leaves.Add(6) // workers 0..3 start 1, 2, 1, 2 leaves
	go server()
	leaves.Wait()
	time.Sleep(20 * time.Millisecond) // let the exiting parents exit
	mu.Lock()
	fmt.Fprintln(out, "ready")
	out.Flush()
	mu.Unlock()
	bufio.NewReader(os.Stdin).ReadString('\n')
}
