// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

import (
	"os"
	"runtime"
	"runtime/testdata/fpunwindwork"
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
// trace stacks; run with GODEBUG=fpunwindcheck=2 for the exit report.
func FPUnwindCheck() {
	runtime.MemProfileRate = 1
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	if err := fpunwindwork.Contend(fpuDeep, func() { fpuSink = make([]byte, 64) }); err != nil {
		panic(err)
	}
	// A parked goroutine, for the goroutine profile.
	parked, park := make(chan bool), make(chan bool)
	go fpuDeep(5, func() { parked <- true; <-park })
	<-parked
	time.Sleep(10 * time.Millisecond)
	p := make([]runtime.StackRecord, 100)
	runtime.GoroutineProfile(p)
	close(park)
	if os.Getenv("FPUNWINDCHECK_EXIT") == "osexit" {
		os.Exit(0)
	}
}
