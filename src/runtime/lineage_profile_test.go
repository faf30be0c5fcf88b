// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"fmt"
	"internal/profile"
	"internal/testenv"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// lineageProfileRun runs testprog's LineageProfile with the given GODEBUG
// and returns its profiles by name.
func lineageProfileRun(t *testing.T, exe, godebug string) (string, map[string]*profile.Profile) {
	t.Helper()
	dir := t.TempDir()
	out := runBuiltTestProg(t, exe, "LineageProfile", "GODEBUG="+godebug, "LINEAGEPROF_DIR="+dir)
	if strings.TrimSpace(out) != "OK" {
		t.Fatalf("GODEBUG=%s: LineageProfile: want OK, got\n%s", godebug, out)
	}
	profs := map[string]*profile.Profile{}
	for _, name := range []string{"cpu", "allocs", "block", "mutex", "goroutine", "goroutinecreate"} {
		f, err := os.Open(filepath.Join(dir, name+".pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("GODEBUG=%s: parsing the %s profile: %v", godebug, name, err)
		}
		profs[name] = p
	}
	return dir, profs
}

// lineageProfileFuncs returns the functions of s's stack, leaf first,
// inlined frames expanded, without the go statements' wrappers (F.gowrapN),
// which the block and mutex profiles keep.
func lineageProfileFuncs(s *profile.Sample) []string {
	var fns []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if !strings.Contains(l.Function.Name, ".gowrap") {
				fns = append(fns, l.Function.Name)
			}
		}
	}
	return fns
}

// lineageProfileAfter returns the functions after root in fns, the
// creation ancestry if root is the function a goroutine started with
// (runtime/pprof leaves runtime.goexit out), and whether fns has root.
func lineageProfileAfter(fns []string, root string) ([]string, bool) {
	i := slices.Index(fns, root)
	if i < 0 {
		return nil, false
	}
	return fns[i+1:], true
}

// TestLineageProfile is the acceptance test of GODEBUG lineageprofile=1:
// the crunchers' CPU time, allocations, blocking, mutex contention and
// goroutines are charged to the connection and the acceptor that started
// them, the janitor's are not, and without the setting nothing follows
// the goroutines' functions and main.lpAcceptor gets nothing.
func TestLineageProfile(t *testing.T) {
	testenv.MustHaveGoRun(t)
	exe, err := buildTestProg(t, "testprog")
	if err != nil {
		t.Fatal(err)
	}
	crunched := []string{"main.lpConn", "main.lpAcceptor", "main.LineageProfile"}
	janitored := []string{"main.LineageProfile"}

	for _, on := range []bool{true, false} {
		godebug := "lineageprofile=0"
		if on {
			godebug = "lineageprofile=1"
		}
		dir, profs := lineageProfileRun(t, exe, godebug)

		// What a user sees: go tool pprof -top -cum names main.lpAcceptor
		// in the allocation profile only with the setting.
		out, err := testenv.Command(t, testenv.GoToolPath(t), "tool", "pprof", "-top", "-cum", "-sample_index=alloc_space", filepath.Join(dir, "allocs.pb.gz")).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "main.lpAcceptor") != on {
			t.Errorf("%s: go tool pprof -top -cum of the allocs profile: main.lpAcceptor listed: %v, want %v\n%s", godebug, !on, on, out)
		}
		for _, name := range []string{"cpu", "allocs", "block", "mutex", "goroutine"} {
			p := profs[name]
			var crunchers, janitors int
			var acceptorCum, cruncherCum, inheritedCum int64
			for _, s := range p.Sample {
				if !slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 }) {
					// A heap bucket whose allocations are not
					// published yet (a cycle still in progress);
					// TestMemProfileLineageNoZeroBucket checks
					// that none stands for a stack without its
					// ancestry.
					continue
				}
				fns := lineageProfileFuncs(s)
				if slices.Contains(fns, "main.lpAcceptor") {
					acceptorCum += s.Value[0]
				}
				var after, want []string
				if a, ok := lineageProfileAfter(fns, "main.lpCruncher"); ok {
					crunchers++
					cruncherCum += s.Value[0]
					after, want = a, crunched
				} else if a, ok := lineageProfileAfter(fns, "main.lpJanitor"); ok {
					janitors++
					after, want = a, janitored
				} else {
					continue
				}
				if slices.Contains(fns, "main.lpAcceptor") {
					// Below a worker's own function: inherited.
					inheritedCum += s.Value[0]
				}
				if !on {
					want = nil
				}
				if !slices.Equal(after, want) {
					t.Errorf("%s %s: after the goroutine's function: got %v, want %v\nstack: %v", godebug, name, after, want, fns)
				}
			}
			t.Logf("%s %s: %d cruncher samples, %d janitor samples, main.lpAcceptor cum %d of the crunchers' %d", godebug, name, crunchers, janitors, acceptorCum, cruncherCum)
			if crunchers == 0 {
				if name == "cpu" || name == "mutex" {
					// Sampling on a loaded machine.
					t.Logf("%s %s: no cruncher samples", godebug, name)
					continue
				}
				t.Errorf("%s %s: no cruncher samples", godebug, name)
			}
			if on && acceptorCum < cruncherCum {
				t.Errorf("%s %s: main.lpAcceptor cum %d < the crunchers' %d", godebug, name, acceptorCum, cruncherCum)
			}
			// Without lineage, main.lpAcceptor is in no worker's
			// stack; it can still be in samples of its own (the
			// runtime locks its go statements contend on).
			if !on && inheritedCum != 0 {
				t.Errorf("%s %s: main.lpAcceptor in the workers' samples, cum %d, want 0", godebug, name, inheritedCum)
			}
		}

		// goroutinecreate does not depend on lineageprofile: each cruncher
		// counts at its go statement in main.lpConn, with its ancestry.
		var crunchers, janitors int64
		for _, s := range profs["goroutinecreate"].Sample {
			fns := lineageProfileFuncs(s)
			switch {
			case slices.Equal(fns, crunched):
				crunchers += s.Value[0]
			case slices.Equal(fns, janitored):
				janitors += s.Value[0]
			}
		}
		if crunchers != 8 || janitors < 1 {
			t.Errorf("%s goroutinecreate: %d crunchers (want 8) and %d goroutines created by main.LineageProfile (want >= 1)\n%s", godebug, crunchers, janitors, profs["goroutinecreate"])
		}
	}
}

// With lineageprofile off, sigprof pays a load of the setting, a test, a
// branch not taken and a jump over the ancestry call before it adds the
// sample as upstream does: check that the compiled hook is that, and not
// a call.
func TestLineageProfileHookCost(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("instruction sequence checked on amd64 only")
	}
	testenv.MustHaveGoBuild(t)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	out, err := testenv.Command(t, testenv.GoToolPath(t), "tool", "objdump", "-s", `^runtime\.sigprof$`, exe).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	var insns []string // opcode and operands
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[1], "0x") {
			continue
		}
		insns = append(insns, strings.Join(f[3:], " "))
	}
	load := fmt.Sprintf("runtime.debug+%d(SB)", runtime.LineageProfileDebugOffset)
	i := slices.IndexFunc(insns, func(s string) bool { return strings.Contains(s, load) })
	if i < 0 || i+3 >= len(insns) {
		t.Fatalf("sigprof does not load debug.lineageprofile (%s):\n%s", load, out)
	}
	if !strings.HasPrefix(insns[i+1], "TEST") || !strings.HasPrefix(insns[i+2], "JNE") {
		t.Fatalf("sigprof: want the load of debug.lineageprofile followed by TEST and JNE, got %q", insns[i:i+3])
	}
	// Fall through to the upstream call: a bounds check and the
	// arguments, no other call.
	for j := i + 3; j < len(insns) && j < i+3+8; j++ {
		if strings.HasPrefix(insns[j], "CALL") {
			if !strings.Contains(insns[j], "runtime.(*cpuProfile).add") {
				t.Fatalf("sigprof with lineageprofile off calls %q", insns[j])
			}
			return
		}
	}
	t.Fatalf("sigprof with lineageprofile off does not reach cpuProfile.add within 8 instructions: %q", insns[i:min(len(insns), i+12)])
}

// BenchmarkLineageProfileCPUAppend is what one CPU profile sample costs
// sigprof more with lineageprofile=1: appending the ancestry of a goroutine
// three go statements below the benchmark's to a 20-frame stack.
func BenchmarkLineageProfileCPUAppend(b *testing.B) {
	var n int
	lineageProfileSpawn(3, func() {
		for range b.N {
			n = runtime.LineageProfileCPUAppend(20)
		}
	})
	b.ReportMetric(float64(n-20), "frames")
}

// lineageProfileSpawn runs f in a goroutine n go statements below the
// caller's and waits for it.
func lineageProfileSpawn(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	done := make(chan bool)
	go func() {
		lineageProfileSpawn(n-1, f)
		done <- true
	}()
	<-done
}
