// churn creates and ends goroutines as fast as it can while golineage reads
// it. Four spawners, each a different function, start children of their
// own function (spawnA starts childA, and so on); each child starts a leaf
// of its own function and ends, so every leaf outlives its parent. Only the
// lineage ABI tells a reader who created whom, so a reader that mixes up
// records shows a child under the wrong spawner.
//
// Output: "spawner FUNC GOID" for each spawner, then "ready". When its
// standard input closes it prints "created N in D" (goroutines created, and
// for how long) on standard error and exits.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

var (
	created atomic.Int64
	live    = make(chan struct{}, 4096) // bounds the goroutines alive at once
)

func goid() uint64 {
	buf := make([]byte, 64)
	f := strings.Fields(string(buf[:runtime.Stack(buf, false)]))
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

//go:noinline
func leaf() { <-live }

//go:noinline
func childA() { go leafA() }

//go:noinline
func childB() { go leafB() }

//go:noinline
func childC() { go leafC() }

//go:noinline
func childD() { go leafD() }

//go:noinline
func leafA() { leaf() }

//go:noinline
func leafB() { leaf() }

//go:noinline
func leafC() { leaf() }

//go:noinline
func leafD() { leaf() }

//go:noinline
func spawn(name string, ready chan<- string, child func()) {
	ready <- fmt.Sprintf("spawner %s %d", name, goid())
	for {
		live <- struct{}{} // the child's leaf takes it back
		go child()
		created.Add(2)
	}
}

//go:noinline
func spawnA(r chan<- string) { spawn("main.spawnA", r, childA) }

//go:noinline
func spawnB(r chan<- string) { spawn("main.spawnB", r, childB) }

//go:noinline
func spawnC(r chan<- string) { spawn("main.spawnC", r, childC) }

//go:noinline
func spawnD(r chan<- string) { spawn("main.spawnD", r, childD) }

func main() {
	start := time.Now()
	ready := make(chan string)
	go spawnA(ready)
	go spawnB(ready)
	go spawnC(ready)
	go spawnD(ready)
	for range 4 {
		fmt.Println(<-ready)
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Fprintf(os.Stderr, "created %d in %v\n", created.Load(), time.Since(start))
}
