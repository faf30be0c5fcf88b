// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build unix

package runtime_test

import (
	"runtime"
	"testing"
)

//go:noinline
func fpbPark(d int, ch chan struct{}) {
	if d > 0 {
		fpbPark(d-1, ch)
		return
	}
	<-ch
}

// BenchmarkGoroutineProfile10k profiles 10,000 goroutines parked 22 frames
// deep. "cold" wakes and re-parks them between profiles (outside the
// timer), so no goroutine's cached stack can be reused.
func BenchmarkGoroutineProfile10k(b *testing.B) {
	const n = 10000
	for _, mode := range []string{"fp", "fp-cold", "slow"} {
		b.Run(mode, func(b *testing.B) {
			off := "0"
			if mode == "slow" {
				off = "1"
			}
			setGODEBUG(b, "goroutineprofilefpunwindoff="+off)
			ch := make(chan struct{})
			base := runtime.NumGoroutine()
			park := func() {
				for range n {
					go fpbPark(18, ch)
				}
				for runtime.NumGoroutine() < base+n {
					runtime.Gosched()
				}
			}
			park()
			p := make([]runtime.StackRecord, n+100)
			var cpu int64
			b.ResetTimer()
			for range b.N {
				if mode == "fp-cold" {
					b.StopTimer()
					close(ch)
					for runtime.NumGoroutine() > base {
						runtime.Gosched()
					}
					ch = make(chan struct{})
					park()
					b.StartTimer()
				}
				c := cpuNanos()
				runtime.GoroutineProfile(p)
				cpu += cpuNanos() - c
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			close(ch)
			for runtime.NumGoroutine() > base {
				runtime.Gosched()
			}
		})
	}
}
