// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

//go:noinline
func wrappedBlockRecv(ch chan int, done chan bool) {
	<-ch
	close(done)
}

// TestBlockProfileGoWrapper checks the block profile's stack of a
// goroutine started by a go statement with arguments, which runs under a
// physical wrapper (the statement's gowrap1): the frame-pointer path must
// elide the wrapper, as gentraceback (the slow path) does.
func TestBlockProfileGoWrapper(t *testing.T) {
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	ch, done := make(chan int), make(chan bool)
	go wrappedBlockRecv(ch, done)
	time.Sleep(10 * time.Millisecond)
	ch <- 1
	<-done
	runtime.SetBlockProfileRate(0)

	found := false
	for _, names := range blockProfileFuncs() {
		if !strings.Contains(strings.Join(names, " "), "runtime_test.wrappedBlockRecv") {
			continue
		}
		found = true
		for _, name := range names {
			if strings.Contains(name, ".gowrap") {
				t.Errorf("block profile stack holds the go statement's wrapper: %v", names)
				break
			}
		}
	}
	if !found {
		t.Errorf("no block profile record of wrappedBlockRecv")
	}
}

// blockProfileFuncs returns the function names of each block profile
// record's stack, inlined frames expanded.
func blockProfileFuncs() [][]string {
	var p []runtime.BlockProfileRecord
	n, ok := runtime.BlockProfile(nil)
	for !ok {
		p = make([]runtime.BlockProfileRecord, n+50)
		n, ok = runtime.BlockProfile(p)
	}
	var stacks [][]string
	for _, r := range p[:n] {
		var names []string
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			names = append(names, f.Function)
			if !more {
				break
			}
		}
		stacks = append(stacks, names)
	}
	return stacks
}
