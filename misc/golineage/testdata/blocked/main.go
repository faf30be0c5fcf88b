// blocked parks goroutines in blocking read system calls (each then holds a
// thread) under stacks of known shape, prints the runtime's own traceback of
// all goroutines, then "ready", and waits for its standard input to close.
package main

import (
	"bufio"
	"os"
	"runtime"
	"syscall"
	"time"
)

//go:noinline
func block(fd int) {
	var b [1]byte
	syscall.Read(fd, b[:])
}

func inlined(fd int) { block(fd) }

//go:noinline
func level(n, fd int) {
	if n == 0 {
		inlined(fd)
		return
	}
	level(n-1, fd)
}

type S struct{ fd int }

//go:noinline
func (s S) run(depth int) { level(depth, s.fd) }

func main() {
	var fds [][2]int
	for i := 0; i < 3; i++ {
		var p [2]int
		if err := syscall.Pipe(p[:]); err != nil {
			panic(err)
		}
		fds = append(fds, p)
		go S{p[0]}.run(i + 1)
	}
	time.Sleep(300 * time.Millisecond)
	buf := make([]byte, 1<<20)
	os.Stdout.Write(buf[:runtime.Stack(buf, true)])
	os.Stdout.WriteString("\nready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	for _, p := range fds {
		syscall.Write(p[1], []byte{1})
	}
}
