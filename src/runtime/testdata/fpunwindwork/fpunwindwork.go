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
	"runtime/trace"
	"sync"
	"time"
)

// Stacks that need a situation of their own (a goroutine stopped in a
// frameless leaf, one that has not run yet) come from cases, each in a
// file of its own (case_*.go), which register in init and run in file
// order.
var (
	// ownTrace cases run a trace of their own, before Contend's.
	ownTrace []func() error
	// whileTracing cases run while Contend traces, before the
	// contention. mu is the mutex the contention uses.
	whileTracing []func(mu *sync.Mutex)
)

// Contend records execution trace, block and mutex profile stacks (the
// caller sets the profile rates): the registered cases, contended
// unlocks, then goroutines that lock, sleep and send under different
// depths. deep(n, f) must call f under n extra frames; each goroutine
// calls step, if not nil, in its loop.
func Contend(deep func(int, func()), step func()) error {
	for _, f := range ownTrace {
		if err := f(); err != nil {
			return err
		}
	}
	if err := trace.Start(io.Discard); err != nil {
		return err
	}
	var mu sync.Mutex
	for _, f := range whileTracing {
		f(&mu)
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
