// unstarted creates goroutines that never run: with GOMAXPROCS=1, main
// creates them, prints the runtime's own traceback of all goroutines and
// "ready" by raw system calls (which do not give the P up), then spins
// without a call (nothing preempts it with GODEBUG=asyncpreemptoff=1), so
// the goroutines stay runnable, at their start function's entry, until
// the process is killed.
package main

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

var spin atomic.Int32

//go:noinline
func fetch(url string, i int) { println(url, i) }

//go:noinline
func plain() { println("plain") }

type server struct{ n int }

//go:noinline
func (s *server) serve() { println(s.n) }

// write writes b to standard output without entering the scheduler's
// system call path, which could hand the P to the new goroutines.
func write(b []byte) {
	for len(b) > 0 {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, 1, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno != 0 {
			panic(errno)
		}
		b = b[n:]
	}
}

func main() {
	if runtime.GOMAXPROCS(0) != 1 {
		panic("run with GOMAXPROCS=1")
	}
	s := &server{n: 7}
	go fetch("https://example.com/", 1)
	go fetch("https://example.com/", 2)
	go plain()
	go s.serve()
	go func() { println("closure") }()
	buf := make([]byte, 1<<20)
	write(buf[:runtime.Stack(buf, true)])
	write([]byte("\nready\n"))
	for spin.Load() == 0 {
	}
}
