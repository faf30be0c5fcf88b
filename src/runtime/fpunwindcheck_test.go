// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"os"
	"regexp"
	"runtime"
	"runtime/testdata/fpunwindwork"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fpArch reports whether the runtime's frame-pointer unwinders run here.
func fpArch() bool { return runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" }

// setGODEBUG sets GODEBUG for the rest of the test.
func setGODEBUG(t testing.TB, v string) {
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

//go:noinline
func fpgDeep(d int, f func()) {
	if d > 0 {
		fpgDeep(d-1, f)
		return
	}
	f()
}

// fpunwindcheckWorkload records block, mutex and trace stacks from a
// goroutine started without arguments (block and mutex records keep
// go-statement wrappers that the slow unwinder elides, a known upstream
// difference outside this check's scope).
func fpunwindcheckWorkload(t *testing.T) {
	// Block and mutex profiling is on only inside this goroutine's
	// lifetime, and the test goroutine's own wait ends after it is off.
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
		defer runtime.SetBlockProfileRate(0)
		defer runtime.SetMutexProfileFraction(0)
		if err := fpunwindwork.Contend(fpgDeep, nil); err != nil {
			t.Errorf("trace.Start: %v", err)
		}
	}()
	<-done
}

// fpunwindcheckSites runs work with GODEBUG=fpunwindcheck=1 and checks
// that each of sites checked some unwinds and that none mismatched.
func fpunwindcheckSites(t *testing.T, sites []string, work func()) {
	t.Helper()
	setGODEBUG(t, "")
	defer runtime.SetFPUnwindCheck(runtime.SetFPUnwindCheck(true))
	before := map[string][2]uint64{}
	for _, s := range sites {
		c, m := runtime.FPUnwindCheckCounts(s)
		before[s] = [2]uint64{c, m}
	}
	work()
	for _, s := range sites {
		c, m := runtime.FPUnwindCheckCounts(s)
		c -= before[s][0]
		m -= before[s][1]
		t.Logf("site=%s checked=%d mismatches=%d", s, c, m)
		if c == 0 {
			t.Errorf("site %s: nothing checked", s)
		}
		if m != 0 {
			t.Errorf("site %s: %d of %d mismatched", s, m, c)
		}
	}
}

func TestFPUnwindCheck(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	fpunwindcheckSites(t, []string{"block", "mutex", "trace"}, func() { fpunwindcheckWorkload(t) })

	// A deliberately altered result must be reported: one block event,
	// recorded by a goroutine started without arguments.
	setGODEBUG(t, "")
	defer runtime.SetFPUnwindCheck(runtime.SetFPUnwindCheck(true))
	c0, m0 := runtime.FPUnwindCheckCounts("block")
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.SetBlockProfileRate(1)
		defer runtime.SetBlockProfileRate(0)
		ch := make(chan bool)
		go func() {
			time.Sleep(time.Millisecond)
			ch <- true
		}()
		runtime.FPUnwindCheckInject()
		<-ch
	}()
	<-done
	c1, m1 := runtime.FPUnwindCheckCounts("block")
	if c1 == c0 || m1 != m0+1 {
		t.Errorf("injected mismatch: checked %d->%d, mismatches %d->%d; want one more mismatch", c0, c1, m0, m1)
	}
}

// fpunwindcheckReport runs testprog's FPUnwindCheck with
// GODEBUG=fpunwindcheck=2, ending by exit ("return" or "osexit"), checks
// the lines printed at exit, which fpcheck run parses, and returns the
// sites that have a line.
func fpunwindcheckReport(t *testing.T, exit string) map[string]bool {
	t.Helper()
	out := runTestProg(t, "testprog", "FPUnwindCheck", "GODEBUG=fpunwindcheck=2", "FPUNWINDCHECK_EXIT="+exit)
	site := regexp.MustCompile(`(?m)^fpunwindcheck: site=(\w+) checked=(\d+) mismatches=(\d+)$`)
	total := regexp.MustCompile(`(?m)^fpunwindcheck: checked=(\d+) mismatches=(\d+)$`)
	seen := map[string]bool{}
	var sum uint64
	for _, m := range site.FindAllStringSubmatch(out, -1) {
		seen[m[1]] = true
		c, _ := strconv.ParseUint(m[2], 10, 64)
		sum += c
		if c == 0 || m[3] != "0" {
			t.Errorf("%s: bad line %q", exit, m[0])
		}
	}
	m := total.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.FormatUint(sum, 10) || m[2] != "0" {
		t.Errorf("%s: bad or missing total line in output:\n%s", exit, out)
	}
	if strings.Contains(out, "fpunwindcheck: mismatch") {
		t.Errorf("%s: mismatches reported:\n%s", exit, out)
	}
	return seen
}

// fpunwindcheckExitReport checks that the exit report of testprog's
// FPUnwindCheck has a line for site.
func fpunwindcheckExitReport(t *testing.T, site string) {
	t.Helper()
	if seen := fpunwindcheckReport(t, "return"); !seen[site] {
		t.Errorf("no line for site %s in the exit report", site)
	}
}

// TestFPUnwindCheckOutput checks the lines GODEBUG=fpunwindcheck=2 prints
// at exit, after main returns and after os.Exit, and that
// fpunwindcheck=1 prints nothing when nothing mismatched.
func TestFPUnwindCheckOutput(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	for _, exit := range []string{"return", "osexit"} {
		if out := runTestProg(t, "testprog", "FPUnwindCheck", "GODEBUG=fpunwindcheck=1", "FPUNWINDCHECK_EXIT="+exit); strings.Contains(out, "fpunwindcheck:") {
			t.Errorf("%s: fpunwindcheck=1 printed a report although nothing mismatched:\n%s", exit, out)
		}
		seen := fpunwindcheckReport(t, exit)
		for _, s := range []string{"block", "mutex", "trace"} {
			if !seen[s] {
				t.Errorf("%s: no line for site %s", exit, s)
			}
		}
	}
}
