// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

import (
	"io"
	"os"
	"runtime"
	"runtime/trace"
	"sync"
	"time"
)

func init() {
	register("FPUnwindCheck", FPUnwindCheck)
}

var fpuSink []byte

//go:noinline
func fpuDeep(d int, f func()) {
	if d > 0 {
		fpuDeep(d-1, f)
		return
	}
	f()
}

// FPUnwindCheck runs code that records heap, goroutine, block, mutex and
// trace stacks; run with GODEBUG=fpunwindcheck=1.
func FPUnwindCheck() {
	runtime.MemProfileRate = 1
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	trace.Start(io.Discard)
	var mu sync.Mutex
	// Contended unlocks, for the mutex profile.
	for range 5 {
		mu.Lock()
		locked := make(chan bool)
		go func() {
			locked <- true
			mu.Lock()
			mu.Unlock()
		}()
		<-locked
		time.Sleep(time.Millisecond)
		fpuDeep(3, mu.Unlock)
	}
	ch := make(chan int)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fpuDeep(i*9, func() {
				for j := range 20 {
					fpuSink = make([]byte, 64)
					mu.Lock()
					time.Sleep(time.Microsecond)
					mu.Unlock()
					select {
					case ch <- j:
					case <-time.After(time.Microsecond):
					}
				}
			})
		}()
	}
	go func() {
		for range ch {
		}
	}()
	wg.Wait()
	trace.Stop()
	p := make([]runtime.StackRecord, 100)
	runtime.GoroutineProfile(p)
	if os.Getenv("FPUNWINDCHECK_EXIT") == "osexit" {
		os.Exit(0)
	}
}
