// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// The heap and goroutine profiles must not change when the runtime records
// their stacks by frame-pointer unwinding (GODEBUG=memprofilefpunwindoff
// and goroutineprofilefpunwindoff switch between the two paths at run time).

package pprof

import (
	"bytes"
	"fmt"
	"internal/profile"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

func fpTestArch() bool { return runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" }

func setGODEBUGForTest(t *testing.T, v string) {
	old, had := os.LookupEnv("GODEBUG")
	os.Setenv("GODEBUG", v)
	t.Cleanup(func() {
		if had {
			os.Setenv("GODEBUG", old)
		} else {
			os.Unsetenv("GODEBUG")
		}
	})
}

var fpHeapSink any

type fpHeapT struct{ a, b, c *int }

func (t *fpHeapT) alloc() { fpHeapSink = &fpHeapT{} }

func fpHeapInline() { fpHeapSink = make([]*int, 7) }

//go:noinline
func fpHeapRec(d int, f func()) {
	if d > 0 {
		fpHeapRec(d-1, f)
		return
	}
	f()
}

func fpHeapCorpus() {
	t := &fpHeapT{}
	for _, d := range []int{0, 5, 40, 200} {
		fpHeapRec(d, func() { fpHeapSink = make([]byte, 100) })
		fpHeapRec(d, fpHeapInline)
		fpHeapRec(d, t.alloc)
		fpHeapRec(d, func() {
			defer func() { recover(); fpHeapSink = new([5]*int) }()
			panic("x")
		})
	}
}

// heapSamples returns alloc_objects per symbolized stack of the heap
// profile samples whose stack contains a fpHeap function.
func heapSamples(t *testing.T) map[string]int64 {
	t.Helper()
	runtime.GC()
	runtime.GC()
	var buf bytes.Buffer
	if err := Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, s := range p.Sample {
		var b strings.Builder
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				fmt.Fprintf(&b, "%s:%d;", l.Function.Name, l.Line)
			}
		}
		k := b.String()
		if strings.Contains(k, "pprof.fpHeap") {
			m[fmt.Sprintf("%d %s", s.NumLabel["bytes"], k)] += s.Value[0]
		}
	}
	return m
}

func TestHeapProfileFPDifferential(t *testing.T) {
	if !fpTestArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	prev := heapSamples(t)
	var deltas []map[string]int64
	for _, off := range []string{"0", "1", "0"} {
		setGODEBUGForTest(t, "memprofilefpunwindoff="+off)
		fpHeapCorpus()
		cur := heapSamples(t)
		d := map[string]int64{}
		for k, v := range cur {
			if v > prev[k] {
				d[k] = v - prev[k]
			}
		}
		deltas = append(deltas, d)
		prev = cur
	}
	if len(deltas[0]) < 16 {
		t.Fatalf("corpus produced %d distinct heap samples, want at least 16", len(deltas[0]))
	}
	for i := 1; i < len(deltas); i++ {
		for k := range deltas[i] {
			if deltas[0][k] == 0 {
				t.Errorf("phase %d: sample only in this phase: %s", i, k)
			}
		}
		for k := range deltas[0] {
			if deltas[i][k] == 0 {
				t.Errorf("phase %d: sample missing: %s", i, k)
			}
		}
	}
}

//go:noinline
func fpGoroutineDeep(d int, f func()) {
	if d > 0 {
		fpGoroutineDeep(d-1, f)
		return
	}
	f()
}

func TestGoroutineProfileFPDifferential(t *testing.T) {
	if !fpTestArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	var mu sync.Mutex
	mu.Lock()
	done := make(chan struct{})
	var wg, started sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			fpGoroutineDeep(i%7*5, func() {
				switch i % 3 {
				case 0:
					<-done
				case 1:
					mu.Lock()
					mu.Unlock()
				case 2:
					select {
					case <-done:
					case <-time.After(time.Hour):
					}
				}
			})
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond)
	defer func() {
		close(done)
		mu.Unlock()
		wg.Wait()
	}()

	write := func(debugLevel int, off string) string {
		setGODEBUGForTest(t, "goroutineprofilefpunwindoff="+off)
		var buf bytes.Buffer
		if err := Lookup("goroutine").WriteTo(&buf, debugLevel); err != nil {
			t.Fatal(err)
		}
		if debugLevel != 0 {
			return buf.String()
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, s := range p.Sample {
			var b strings.Builder
			fmt.Fprintf(&b, "%d:", s.Value[0])
			for _, loc := range s.Location {
				for _, l := range loc.Line {
					fmt.Fprintf(&b, "%s:%d;", l.Function.Name, l.Line)
				}
			}
			lines = append(lines, b.String())
		}
		return strings.Join(lines, "\n")
	}
	for _, debugLevel := range []int{0, 1, 2} {
		var out []string
		for _, off := range []string{"0", "1", "0"} {
			out = append(out, write(debugLevel, off)) // one call site: the caller's stack is in the profile
		}
		fast, slow, fast2 := out[0], out[1], out[2]
		if !strings.Contains(fast, "fpGoroutineDeep") {
			t.Errorf("debug=%d: profile lacks the parked goroutines:\n%s", debugLevel, fast)
		}
		if debugLevel == 2 {
			// runtime.Stack output; only wait times could differ.
			continue
		}
		if fast != slow || fast != fast2 {
			t.Errorf("debug=%d: profiles differ:\nframe pointers:\n%s\nslow:\n%s\nframe pointers again:\n%s", debugLevel, fast, slow, fast2)
		}
	}
}
