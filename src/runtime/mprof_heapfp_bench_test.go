// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build unix

package runtime_test

import (
	"runtime"
	"syscall"
	"testing"
)

// cpuNanos is the process's user+system CPU time (getrusage, hence the
// build constraint), which unlike wall time includes the GC's background
// work and excludes time waiting for a CPU on a loaded machine.
func cpuNanos() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func reportCPU(b *testing.B, f func()) {
	c := cpuNanos()
	f()
	b.ReportMetric(float64(cpuNanos()-c)/float64(b.N), "cpu-ns/op")
}

var fpbSink []byte

//go:noinline
func fpbAllocAt(d int) {
	if d > 0 {
		fpbAllocAt(d - 1)
		return
	}
	fpbSink = make([]byte, 64)
}

//go:noinline
func fpbCaptureAt(d int, f func()) {
	if d > 0 {
		fpbCaptureAt(d-1, f)
		return
	}
	f()
}

// BenchmarkHeapProfileAlloc is a 64-byte allocation 32 frames deep.
func BenchmarkHeapProfileAlloc(b *testing.B) {
	for _, rate := range []int{1, 512 * 1024} {
		for _, off := range []string{"0", "1"} {
			name := map[string]string{"0": "fp", "1": "slow"}[off]
			b.Run(map[int]string{1: "rate=1", 512 * 1024: "rate=default"}[rate]+"/"+name, func(b *testing.B) {
				setGODEBUG(b, "memprofilefpunwindoff="+off)
				old := runtime.MemProfileRate
				runtime.MemProfileRate = rate
				defer func() { runtime.MemProfileRate = old }()
				fpbAllocAt(26) // warm the bucket
				b.ResetTimer()
				reportCPU(b, func() {
					for range b.N {
						fpbAllocAt(26) // + the benchmark's frames: 32 deep
					}
				})
			})
		}
	}
}

// BenchmarkHeapStackCapture is the stack-capture step alone, 32 frames
// deep: a frame-pointer walk against callers().
func BenchmarkHeapStackCapture(b *testing.B) {
	buf := make([]uintptr, 135)
	for _, name := range []string{"fp", "slow"} {
		b.Run(name, func(b *testing.B) {
			n := 0
			fpbCaptureAt(27, func() {
				if name == "fp" {
					n = runtime.FPWalkHere(buf)
				} else {
					n = runtime.CallersHere(buf)
				}
			})
			if n < 32 {
				b.Fatalf("captured %d frames, want >= 32", n)
			}
			fpbCaptureAt(27, func() {
				b.ResetTimer()
				if name == "fp" {
					for range b.N {
						runtime.FPWalkHere(buf)
					}
				} else {
					for range b.N {
						runtime.CallersHere(buf)
					}
				}
			})
		})
	}
}
