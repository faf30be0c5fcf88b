// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build linux && (amd64 || arm64)

package main

// Frame-pointer chains of cgo callbacks (doc/fp-boundaries.md). C calls
// back into Go with a frame pointer that points nowhere, on a Go-created
// thread and on a C-created thread (extra M). In the callback the
// frame-pointer chain must link to the goroutine's frames at the cgocall
// site, skipping the C frames, as gentraceback (runtime.Callers) does, or
// end on the C-created thread (go.dev/issue/59401, 59830). The execution
// tracer and the block and mutex profilers, which now unwind with frame
// pointers with cgo on the stack, must record the same stacks; the test
// compares this program's output with GODEBUG=tracefpunwindoff=1 as well
// (go.dev/issue/73664, 74851).

/*
void fpchain_on_c_thread(void);
void fpchain_go_callback(void);
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"internal/trace"
	"os"
	"runtime"
	"runtime/pprof"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"
)

func init() {
	register("FPChainCallback", FPChainCallback)
}

var (
	fpchainCtx    string // "go" or "c": the thread the callback runs on
	fpchainErrs   []string
	fpchainExpect = map[string][]string{} // event kind+ctx -> expected stack
)

func fpchainErrorf(format string, args ...any) {
	fpchainErrs = append(fpchainErrs, fmt.Sprintf(format, args...))
}

func pcNames(pcs []uintptr) []string {
	var names []string
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		names = append(names, f.Function)
		if !more {
			return names
		}
	}
}

// from returns the part of names that starts at fn.
func from(names []string, fn string) []string {
	if i := slices.Index(names, fn); i >= 0 {
		return names[i:]
	}
	return nil
}

var fpchainRet [1]uintptr

// fpchainFrame returns its caller's frame pointer and its own return
// address, and the address of one of its locals. Both are read from its own
// frame record while it is live: once fpchainFrame returns, its frame is
// dead stack, below the caller's stack pointer, which an asynchronously
// injected call (asyncPreempt, saving every register) may overwrite before
// the caller reads it. It finds the record by the return address: on amd64
// the return address is above the locals (scan up from a local); on arm64
// the saved LR is at 0(RSP), below them (scan down; stale copies left by
// runtime.Callers lie further down, below RSP). The saved frame pointer is
// the word below the return address on both.
//
//go:noinline
func fpchainFrame() (callerFP, ret, here uintptr) {
	var x byte
	here = uintptr(unsafe.Pointer(&x))
	if runtime.Callers(2, fpchainRet[:]) != 1 {
		return 0, 0, here
	}
	step := uintptr(8)
	if runtime.GOARCH == "arm64" {
		step = -step
	}
	for a, i := here&^7, 0; i < 512; a, i = a+step, i+1 {
		if fpchainLoad(a) == fpchainRet[0] {
			return fpchainLoad(a - 8), fpchainRet[0], here
		}
	}
	return 0, 0, here
}

// fpchainLoad reads the word at a, an address on a stack: the walks read
// frame records from their addresses alone, so -race's pointer checks
// (checkptr), which reject a pointer made from an integer, are off here.
//
//go:nocheckptr
func fpchainLoad(a uintptr) uintptr { return *(*uintptr)(unsafe.Pointer(a)) }

// fpchainCheck walks the frame-pointer chain and compares it with
// runtime.Callers.
//
//go:noinline
func fpchainCheck() {
	fp, ret, here := fpchainFrame()
	if ret == 0 {
		fpchainErrorf("%s: own frame not found", fpchainCtx)
		return
	}
	fpPCs := []uintptr{ret}
	prev := uintptr(0)
	for fp != 0 {
		// The chain stays on this goroutine's stack: near here, growing.
		if fp <= prev || fp < here-4096 || fp > here+1<<20 || len(fpPCs) == 256 {
			fpchainErrorf("%s: bad frame pointer %#x after %d frames (local at %#x)", fpchainCtx, fp, len(fpPCs), here)
			return
		}
		fpPCs = append(fpPCs, fpchainLoad(fp+unsafe.Sizeof(fp)))
		prev, fp = fp, fpchainLoad(fp)
	}
	pcs := make([]uintptr, 256)
	want := pcNames(pcs[:runtime.Callers(1, pcs)])
	got := pcNames(fpPCs)
	if !slices.Equal(got, want) {
		fpchainErrorf("%s: frame-pointer chain\n\t%s\nruntime.Callers\n\t%s", fpchainCtx,
			strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if want[len(want)-1] != "runtime.goexit" {
		fpchainErrorf("%s: stack does not end at goexit: %v", fpchainCtx, want)
	}
	if fpchainCtx == "go" && !slices.Contains(want, "main.FPChainCallback") {
		fpchainErrorf("%s: callback stack does not reach the cgocall site: %v", fpchainCtx, want)
	}
	fpchainChecked++
}

var fpchainChecked int

func callersFrom(fn string) []string {
	pcs := make([]uintptr, 256)
	return from(pcNames(pcs[:runtime.Callers(2, pcs)]), fn)
}

//go:noinline
func fpchainBlock() {
	fpchainExpect["block "+fpchainCtx] = callersFrom("main.fpchainBlock")
	ch := make(chan int)
	go func() { time.Sleep(2 * time.Millisecond); ch <- 1 }()
	<-ch
}

var fpchainMu sync.Mutex

//go:noinline
func fpchainMutex() {
	fpchainMu.Lock()
	done := make(chan bool)
	go func() { fpchainMu.Lock(); fpchainMu.Unlock(); close(done) }()
	time.Sleep(2 * time.Millisecond)
	fpchainExpect["mutex "+fpchainCtx] = callersFrom("main.fpchainMutex")
	fpchainMu.Unlock()
	<-done
}

//go:noinline
func fpchainTraceLog() {
	fpchainExpect["trace "+fpchainCtx] = callersFrom("main.fpchainTraceLog")
	rtrace.Log(context.Background(), "fpchain", fpchainCtx)
}

// fpchainGrow grows the stack with the callback's frames on it: copystack
// must adjust their frame pointers, which upstream linked to the g0 stack
// (debugCheckBP's "bad frame pointer", go.dev/issue/59401).
//
//go:noinline
func fpchainGrow(n int) {
	var pad [1024]byte
	if n == 0 {
		fpchainCheck()
		return
	}
	fpchainGrow(n - 1)
	pad[n%len(pad)] = byte(n)
	fpchainSink += int(pad[(n+1)%len(pad)])
}

var fpchainSink int

//export goFPChainCallback
func goFPChainCallback() {
	fpchainCheck()
	fpchainGrow(100)
	fpchainBlock()
	fpchainMutex()
	fpchainTraceLog()
	runtime.GC()
	fpchainCheck()
}

func FPChainCallback() {
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	var cpu, tr bytes.Buffer
	if err := pprof.StartCPUProfile(&cpu); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if err := rtrace.Start(&tr); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fpchainCtx = "go"
	C.fpchain_go_callback()
	fpchainCtx = "c"
	C.fpchain_on_c_thread()
	// More callbacks under SIGPROF.
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		fpchainCtx = "go"
		C.fpchain_go_callback()
		fpchainCtx = "c"
		C.fpchain_on_c_thread()
	}
	rtrace.Stop()
	pprof.StopCPUProfile()

	got := map[string][]string{}
	// Block and mutex profiles.
	for _, kind := range []string{"block", "mutex"} {
		var recs []runtime.BlockProfileRecord
		for {
			n, ok := 0, false
			if kind == "block" {
				n, ok = runtime.BlockProfile(recs)
			} else {
				n, ok = runtime.MutexProfile(recs)
			}
			if ok {
				recs = recs[:n]
				break
			}
			recs = make([]runtime.BlockProfileRecord, n+10)
		}
		fn := "main.fpchainBlock"
		if kind == "mutex" {
			fn = "main.fpchainMutex"
		}
		for _, r := range recs {
			names := from(pcNames(r.Stack()), fn)
			if names == nil {
				continue
			}
			ctx := "go"
			if !slices.Contains(names, "main.FPChainCallback") {
				ctx = "c"
			}
			got[kind+" "+ctx] = names
		}
	}
	// Execution trace: the stacks of our log events.
	r, err := trace.NewReader(&tr)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for {
		ev, err := r.ReadEvent()
		if err != nil {
			break
		}
		if ev.Kind() != trace.EventLog || ev.Log().Category != "fpchain" {
			continue
		}
		var pcs []uintptr
		var names []string
		for f := range ev.Stack().Frames() {
			pcs = append(pcs, uintptr(f.PC))
			names = append(names, f.Func)
		}
		got["trace "+ev.Log().Message] = from(names, "main.fpchainTraceLog")
	}

	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range fpchainExpect {
			if !yield(k) {
				return
			}
		}
	}) {
		want := fpchainExpect[k]
		g := got[k]
		if kind, _, _ := strings.Cut(k, " "); kind == "trace" && len(want) > 0 && want[len(want)-1] == "runtime.goexit" {
			want = want[:len(want)-1] // the tracer omits goexit
			if len(want) > 0 && want[len(want)-1] == "runtime.main" {
				want = want[:len(want)-1] // and runtime.main
			}
		}
		if !slices.Equal(g, want) {
			fpchainErrorf("%s stack:\n\t%s\nwant (runtime.Callers):\n\t%s", k, strings.Join(g, "\n\t"), strings.Join(want, "\n\t"))
		}
		fmt.Printf("%s: %s\n", k, strings.Join(g, " "))
	}
	if fpchainChecked < 6 {
		fpchainErrorf("only %d frame-pointer checks ran", fpchainChecked)
	}
	if len(fpchainErrs) > 0 {
		fmt.Println(strings.Join(fpchainErrs, "\n"))
		os.Exit(1)
	}
	fmt.Println("OK")
}
