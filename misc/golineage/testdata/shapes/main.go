// shapes parks goroutines in the shapes whose stacks are hard to get right
// from outside: deep recursion, inlined frames, closures, generic functions,
// timers in select, a locked thread, a blocking system call, a cgo call that
// blocks in C, and a cgo callback that parks in Go under C frames. It prints
// its own goroutine dump (pprof debug=2) once all are parked, then "ready",
// and waits for its standard input to close. It collects garbage once all
// are parked, so that the runtime records when each began to wait.
package main

/*
#include <unistd.h>

extern void shapesPark(void);

static void shapesSleep(void) {
	for (;;)
		sleep(3600);
}

static void shapesCallback(void) {
	shapesPark();
}
*/
import "C"

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

var (
	stop    = make(chan struct{})
	blocked = make(chan int)
)

//go:noinline
func deep(n int) {
	if n > 0 {
		deep(n - 1)
		return
	}
	<-stop
}

// recvInlined is inlined into its caller.
func recvInlined(c chan int) int { return <-c }

//go:noinline
func inlinedCaller() { recvInlined(blocked) }

//go:noinline
func generic[T any](c chan T) T { return <-c }

type box struct{ c chan string }

//go:noinline
func (b *box) method() { <-b.c }

//go:noinline
func timers() {
	t := time.NewTicker(time.Hour)
	select {
	case <-t.C:
	case <-time.After(time.Hour):
	case <-stop:
	}
}

//go:noinline
func ticker() {
	t := time.NewTicker(time.Hour)
	<-t.C
}

//go:noinline
func locked() {
	runtime.LockOSThread()
	<-stop
}

//go:noinline
func reader(fd int) {
	var b [1]byte
	syscall.Read(fd, b[:])
}

//go:noinline
func cSleeper() { C.shapesSleep() }

//export shapesPark
func shapesPark() { <-stop }

//go:noinline
func cCaller() { C.shapesCallback() }

const want = 12

func dump() string {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}

// waitParked returns the goroutine dump once want goroutines created by
// main.main are parked or in a system call, the callback among them.
func waitParked() string {
	for i := 0; ; i++ {
		d := dump()
		parked := 0
		for _, b := range strings.Split(d, "\n\n") {
			if strings.Contains(b, "created by main.main") && !strings.Contains(b, "[running") && !strings.Contains(b, "[runnable") {
				parked++
			}
		}
		if parked >= want && strings.Contains(d, "main.shapesPark()") || i > 5000 {
			return d
		}
		time.Sleep(time.Millisecond)
	}
}

func main() {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		panic(err)
	}
	go deep(30)
	go inlinedCaller()
	go generic(make(chan int))
	go generic(make(chan []string))
	go func() { <-stop }()
	go (&box{make(chan string)}).method()
	go timers()
	go ticker()
	go locked()
	go reader(p[0])
	go cSleeper()
	go cCaller()
	waitParked()
	// Garbage collections record when each parked goroutine began to wait
	// (the dump's "N minutes" and golineage's wait_since): the second one,
	// with the time the first one finished marking.
	runtime.GC()
	runtime.GC()
	os.Stdout.WriteString(dump())
	os.Stdout.WriteString("\nready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}
