// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"bytes"
	"internal/profile"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
)

var mlSink []*[5]int

// mlAlloc allocates n objects; it runs in a goroutine that mlSpawn's go
// statement created, so with lineageprofile=1 its heap profile stack
// continues with mlSpawn.
//
//go:noinline
func mlAlloc(n int, done chan<- bool) {
	for range n {
		mlSink = append(mlSink, new([5]int))
	}
	done <- true
}

//go:noinline
func mlSpawn(n int, done chan<- bool) {
	go mlAlloc(n, done)
}

// TestMemProfileLineageNoZeroBucket checks that with GODEBUG
// lineageprofile=1 an allocation's stack is charged to one bucket, with its
// ancestry: the heap profile holds no zero-valued sample whose stack is the
// same stack without its ancestry, by frame pointers and by gentraceback.
func TestMemProfileLineageNoZeroBucket(t *testing.T) {
	for _, godebug := range []string{"lineageprofile=1", "lineageprofile=1,memprofilefpunwindoff=1"} {
		t.Run(godebug, func(t *testing.T) {
			setGODEBUG(t, godebug)
			old := runtime.MemProfileRate
			runtime.MemProfileRate = 1
			mlSink = make([]*[5]int, 0, 64)
			done := make(chan bool)
			for range 4 {
				mlSpawn(16, done)
				<-done
			}
			runtime.MemProfileRate = old
			mlSink = nil
			runtime.GC()
			runtime.GC()

			var buf bytes.Buffer
			if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var stacks [][]string
			var zero []bool
			withAncestry := 0
			for _, s := range p.Sample {
				var fns []string
				for _, loc := range s.Location {
					for _, l := range loc.Line {
						fns = append(fns, l.Function.Name)
					}
				}
				i := slices.Index(fns, "runtime_test.mlAlloc")
				if i < 0 {
					continue
				}
				isZero := !slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 })
				if !isZero && slices.Contains(fns[i+1:], "runtime_test.mlSpawn") {
					withAncestry++
				}
				stacks = append(stacks, fns)
				zero = append(zero, isZero)
			}
			if withAncestry == 0 {
				t.Fatalf("no sample of mlAlloc continues with its creator mlSpawn: %v", stacks)
			}
			for i, s := range stacks {
				if !zero[i] {
					continue
				}
				for j, o := range stacks {
					if j != i && len(o) > len(s) && slices.Equal(o[:len(s)], s) {
						t.Errorf("zero-valued sample %v is a prefix of %v", s, o)
					}
				}
			}
		})
	}
}
