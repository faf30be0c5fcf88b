// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package fpunwindwork is the block, mutex and trace workload of the
// runtime's GODEBUG=fpunwindcheck tests, shared by the in-process test
// (fpunwindcheck_test.go) and testprog's FPUnwindCheck, which checks the
// lines printed at exit.
package fpunwindwork

import (
	"io"
	"runtime"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// Contend records execution trace, block and mutex profile stacks (the
// caller sets the profile rates): contended unlocks, then goroutines that
// lock, sleep and send under different depths. deep(n, f) must call f
// under n extra frames; each goroutine calls step, if not nil, in its
// loop.
func Contend(deep func(int, func()), step func()) error {
	// A goroutine that has not run when tracing starts: the trace records
	// its status with a stack of its entry alone.
	procs := runtime.GOMAXPROCS(1)
	unstarted := make(chan bool, 1)
	go func() { unstarted <- true }()
	err := trace.Start(io.Discard)
	runtime.GOMAXPROCS(procs)
	<-unstarted
	if err != nil {
		return err
	}
	var mu sync.Mutex
	// Faults in a frameless leaf, recovered, with trace events in the
	// deferred call while the goroutine panics: sigpanic's frame record
	// skips the leaf's caller.
	for range 3 {
		faultInLeaf(&mu)
	}
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
		deep(3, mu.Unlock)
	}
	ch := make(chan int)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deep(i*7, func() {
				for j := range 20 {
					if step != nil {
						step()
					}
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
	close(ch)
	trace.Stop()
	return nil
}

// faultInLeaf calls a frameless leaf that faults, and sleeps and locks in
// the deferred call that recovers.
//
//go:noinline
func faultInLeaf(mu *sync.Mutex) {
	defer func() {
		recover()
		mu.Lock()
		time.Sleep(time.Microsecond)
		mu.Unlock()
	}()
	nilLeaf(nil)
}

// nilLeaf has no frame record: no calls, no locals.
//
//go:noinline
func nilLeaf(p *int32) { atomic.AddInt32(p, 1) }
