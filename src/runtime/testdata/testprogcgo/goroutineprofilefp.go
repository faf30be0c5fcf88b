// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

// Goroutines in a cgo call and in a C-to-Go callback must appear the same in
// the goroutine profile with frame-pointer unwinding and without. The
// callbacks also allocate, so that under GODEBUG=fpunwindcheck=1 the heap
// profiler's frame-pointer walks in a callback are checked too.

/*
#include <unistd.h>

extern void goroutineProfileFPCallback(void);

static void fpSleepInC(void) { usleep(300000); }
static void fpCallGo(void) { goroutineProfileFPCallback(); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

func init() {
	register("GoroutineProfileFPCgo", GoroutineProfileFPCgo)
}

var (
	fpCallbackPark = make(chan struct{})
	fpCallbackIn   sync.WaitGroup
	fpCallbackSink [][]byte
	fpCallbackMu   sync.Mutex
)

//export goroutineProfileFPCallback
func goroutineProfileFPCallback() {
	fpCallbackMu.Lock()
	fpCallbackSink = append(fpCallbackSink, make([]byte, 1<<20))
	fpCallbackMu.Unlock()
	fpCallbackIn.Done()
	<-fpCallbackPark
}

//go:noinline
func fpCgoDeep(d int, f func()) {
	if d > 0 {
		fpCgoDeep(d-1, f)
		return
	}
	f()
}

func fpCgoStacks() []string {
	p := make([]runtime.StackRecord, 1000)
	n, ok := runtime.GoroutineProfile(p)
	if !ok {
		panic("profile too small")
	}
	var out []string
	for _, r := range p[1:n] {
		var b strings.Builder
		cf := runtime.CallersFrames(r.Stack())
		for {
			f, more := cf.Next()
			fmt.Fprintf(&b, "%s:%d;", f.Function, f.Line)
			if !more {
				break
			}
		}
		if strings.Contains(b.String(), "fpCgoDeep") {
			out = append(out, b.String())
		}
	}
	sort.Strings(out)
	return out
}

func GoroutineProfileFPCgo() {
	var started sync.WaitGroup
	for i := range 3 {
		started.Add(1)
		go fpCgoDeep(i*4, func() { started.Done(); C.fpSleepInC() })
		fpCallbackIn.Add(1)
		go fpCgoDeep(i*4+1, func() { C.fpCallGo() })
	}
	started.Wait()
	fpCallbackIn.Wait()
	time.Sleep(50 * time.Millisecond) // into usleep
	var got [][]string
	for _, off := range []string{"0", "1", "0"} {
		os.Setenv("GODEBUG", "goroutineprofilefpunwindoff="+off)
		got = append(got, fpCgoStacks())
	}
	close(fpCallbackPark)
	if len(got[0]) != 6 {
		fmt.Printf("found %d goroutines, want 6:\n%s\n", len(got[0]), strings.Join(got[0], "\n"))
		return
	}
	for i := 1; i < len(got); i++ {
		if !slices.Equal(got[0], got[i]) {
			fmt.Printf("profile %d differs:\n%s\nvs\n%s\n", i, strings.Join(got[i], "\n"), strings.Join(got[0], "\n"))
			return
		}
	}
	fmt.Println("OK")
}
