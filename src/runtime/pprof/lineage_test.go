// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package pprof

import (
	"bytes"
	"internal/profile"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// lineageSpawn starts n goroutines that wait for release, from a go
// statement of its own.
//
//go:noinline
func lineageSpawn(n int, started chan<- bool, release <-chan bool) {
	for i := 0; i < n; i++ {
		go func() {
			started <- true
			<-release
		}()
	}
}

// lineageSpawnOther is a second creation site.
//
//go:noinline
func lineageSpawnOther(n int, started chan<- bool, release <-chan bool) {
	for i := 0; i < n; i++ {
		go lineageWait(started, release)
	}
}

func lineageWait(started chan<- bool, release <-chan bool) {
	started <- true
	<-release
}

// lineageStart starts 5 goroutines at one site and 3 at the other, waits
// until they run and returns the function that releases them. After the
// test it collects the garbage the test's profiles left, for the same
// reason as TestLineageLabelsABI.
func lineageStart(t *testing.T) func() {
	t.Cleanup(runtime.GC)
	started, release := make(chan bool), make(chan bool)
	lineageSpawn(5, started, release)
	lineageSpawnOther(3, started, release)
	for i := 0; i < 8; i++ {
		<-started
	}
	return func() { close(release) }
}

func lineageFuncs(s *profile.Sample) []string {
	var fns []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			fns = append(fns, l.Function.Name)
		}
	}
	return fns
}

func lineageProfile(t *testing.T, name string) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := Lookup(name).WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parsing the %s profile: %v", name, err)
	}
	return p
}

// The goroutinecreate profile counts live goroutines at the go statements
// that created them, whatever GODEBUG lineageprofile says.
func TestGoroutineCreateProfile(t *testing.T) {
	defer lineageStart(t)()
	if n := Lookup("goroutinecreate").Count(); n < 8 {
		t.Errorf("goroutinecreate Count = %d, want at least 8", n)
	}
	p := lineageProfile(t, "goroutinecreate")
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "goroutinecreate" || p.SampleType[0].Unit != "count" {
		t.Errorf("goroutinecreate sample type %v, want goroutinecreate/count", p.SampleType)
	}
	counts := map[string]int64{}
	for _, s := range p.Sample {
		fns := lineageFuncs(s)
		if len(fns) == 0 {
			t.Errorf("goroutinecreate: a sample without a stack")
			continue
		}
		if slices.Contains(fns, "runtime/pprof.lineageWait") {
			t.Errorf("goroutinecreate: a goroutine's own stack, not its creation site: %v", fns)
		}
		counts[fns[0]] += s.Value[0]
		if fns[0] == "runtime/pprof.lineageSpawn" && !slices.Contains(fns, "testing.(*T).Run") {
			t.Errorf("goroutinecreate: lineageSpawn's goroutines lack their ancestry (the test's go statement in testing.(*T).Run): %v", fns)
		}
	}
	if counts["runtime/pprof.lineageSpawn"] != 5 || counts["runtime/pprof.lineageSpawnOther"] != 3 {
		t.Errorf("goroutinecreate counts by site: %v; want 5 at lineageSpawn and 3 at lineageSpawnOther", counts)
	}

	var text bytes.Buffer
	if err := Lookup("goroutinecreate").WriteTo(&text, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "goroutinecreate profile: total ") || !strings.Contains(text.String(), "\n5 @ ") {
		t.Errorf("goroutinecreate debug=1:\n%s", text.String())
	}
}

// With GODEBUG lineageprofile=1 (which can change at run time) the
// goroutine profile continues each goroutine's stack with the go
// statement that created the goroutine and its ancestors'; without, the
// stacks are upstream's.
func TestLineageProfileGoroutine(t *testing.T) {
	defer lineageStart(t)()
	for _, on := range []bool{false, true} {
		if on {
			t.Setenv("GODEBUG", "lineageprofile=1")
		}
		found := 0
		for _, s := range lineageProfile(t, "goroutine").Sample {
			fns := lineageFuncs(s)
			// runtime/pprof leaves runtime.goexit out: the
			// ancestry follows the goroutine's function.
			i := slices.Index(fns, "runtime/pprof.lineageWait")
			if i < 0 {
				continue
			}
			found++
			after := fns[i+1:]
			if !on && len(after) > 0 {
				t.Errorf("lineageprofile=0: frames after the goroutine's function: %v", fns)
			}
			if on && (len(after) == 0 || after[0] != "runtime/pprof.lineageSpawnOther" || !slices.Contains(after, "testing.(*T).Run")) {
				t.Errorf("lineageprofile=1: want lineageWait followed by lineageSpawnOther, ..., testing.(*T).Run; got %v", fns)
			}
		}
		if found == 0 {
			t.Errorf("lineageprofile=%v: no goroutine of lineageSpawnOther in the goroutine profile", on)
		}
	}
}
