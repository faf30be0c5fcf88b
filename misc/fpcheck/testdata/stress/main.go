// Command stress drives the runtime through the places where frame-pointer
// unwinding is hard -- GC, stack growth and shrinking, preemption, syscalls,
// cgo calls and callbacks (C built without frame pointers), a C-created
// thread calling Go, panics and recover, goroutine and thread exit -- while
// every profiler and the tracer record at their highest rates.
//
// It runs for -d and prints a summary line; fpcheck's tests run it under
// `fpcheck run` and `fpcheck perf`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	duration = flag.Duration("d", 2*time.Second, "how long to run")
	noCgo    = flag.Bool("nocgo", false, "skip the cgo workers")
	only     = flag.String("only", "", "run only these comma-separated workers (e.g. cgo,cthread)")
)

var ops [16]atomic.Int64

const (
	opAlloc = iota
	opGrow
	opPreempt
	opSyscall
	opCgo
	opCgoSpin
	opCThread
	opPanic
	opGoexit
	opThreadExit
	opBlock
	opGoroutineProfile
	opGC
	nops
)

var opNames = [nops]string{"alloc", "grow", "preempt", "syscall", "cgo", "cgospin", "cthread", "panic", "goexit", "threadexit", "block", "goprofile", "gc"}

var sink any

// recurse grows the stack by depth frames of about 1 KiB and allocates at
// the bottom, so heap-profile unwinds see deep stacks that moved.
func recurse(depth int, f func()) int {
	var pad [1024]byte
	pad[depth%len(pad)] = byte(depth)
	if depth == 0 {
		sink = make([]byte, 64)
		if f != nil {
			f()
		}
		return int(pad[0])
	}
	return recurse(depth-1, f) + int(pad[depth%len(pad)])
}

func worker(stop <-chan struct{}, op int, f func()) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		f()
		ops[op].Add(1)
	}
}

var spinSink uint64

func main() {
	flag.Parse()
	runtime.MemProfileRate = 1
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		fmt.Fprintln(os.Stderr, "stress: cpu profile:", err)
		os.Exit(1)
	}
	if err := trace.Start(io.Discard); err != nil {
		fmt.Fprintln(os.Stderr, "stress: trace:", err)
		os.Exit(1)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := func(op int, f func()) {
		if *only != "" && !strings.Contains(","+*only+",", ","+opNames[op]+",") {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(stop, op, f)
		}()
	}
	var mu sync.Mutex
	shared := 0
	ch := make(chan int)

	start(opAlloc, func() {
		for i := 0; i < 64; i++ {
			sink = make([]byte, 16+i)
		}
		recurse(8, nil)
	})
	start(opGrow, func() {
		// Deep growth, then GC shrinks the stack once it is idle again.
		recurse(200, func() { runtime.Gosched() })
	})
	start(opPreempt, func() {
		// A loop without calls: only asynchronous preemption stops it.
		x := uint64(1)
		for i := 0; i < 5_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		spinSink += x
	})
	start(opSyscall, func() {
		syscall.Getpid()
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err == nil {
			f.Write([]byte("x"))
			f.Close()
		}
		time.Sleep(50 * time.Microsecond)
	})
	start(opPanic, func() {
		recurse(16, func() {
			defer func() { sink = recover() }()
			var m map[int]int
			m[0]++ // runtime panic (sigpanic-free) recovered below
		})
		func() {
			defer func() {
				if r := recover(); r != nil {
					sink = r
				}
			}()
			var p *[2]int
			_ = p[1] // nil dereference: a signal, sigpanic, recover
		}()
	})
	start(opGoexit, func() {
		var g sync.WaitGroup
		for i := 0; i < 32; i++ {
			g.Add(1)
			go func() {
				defer g.Done()
				recurse(4, nil)
				if i%8 == 0 {
					runtime.Goexit()
				}
			}()
		}
		g.Wait()
	})
	start(opThreadExit, func() {
		// A goroutine that exits locked to its thread takes the thread with it.
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			recurse(4, nil)
			close(done)
		}()
		<-done
		time.Sleep(time.Millisecond)
	})
	start(opBlock, func() {
		go func() { ch <- 1 }()
		time.Sleep(10 * time.Microsecond)
		<-ch
		mu.Lock()
		shared++
		mu.Unlock()
	})
	for i := 0; i < 2; i++ {
		start(opBlock, func() {
			mu.Lock()
			shared++
			time.Sleep(5 * time.Microsecond)
			mu.Unlock()
		})
	}
	start(opGoroutineProfile, func() {
		pprof.Lookup("goroutine").WriteTo(io.Discard, 0)
		pprof.Lookup("goroutine").WriteTo(io.Discard, 1)
		time.Sleep(20 * time.Millisecond)
	})
	start(opGC, func() {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	})
	if !*noCgo {
		start(opCgo, func() { cgoCallbacks(512) })
		start(opCgoSpin, func() { spinSink += cgoSpin(200_000) })
		start(opCThread, func() {
			if cThread(256) != 0 {
				fmt.Fprintln(os.Stderr, "stress: pthread_create failed")
				os.Exit(1)
			}
		})
	}

	time.Sleep(*duration)
	close(stop)
	wg.Wait()

	trace.Stop()
	pprof.StopCPUProfile()
	for _, p := range []string{"heap", "allocs", "block", "mutex", "goroutine", "threadcreate"} {
		pprof.Lookup(p).WriteTo(io.Discard, 0)
	}
	fmt.Printf("stress: ran %v:", *duration)
	for i := 0; i < nops; i++ {
		fmt.Printf(" %s=%d", opNames[i], ops[i].Load())
	}
	fmt.Printf(" callbacks=%d cthread-calls=%d\n", callbacks.Load(), cThreadOps.Load())
}
