// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// The heap profile must not change when the runtime records its stacks by
// frame-pointer unwinding (GODEBUG=memprofilefpunwindoff switches between
// the two paths at run time).

package pprof

import (
	"bytes"
	"fmt"
	"internal/profile"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
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
