package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/fpcheck/internal/perfcheck"
)

// needPerf installs perf if it is missing (Debian's linux-perf, as root) and
// skips only if perf_event_open is refused.
func needPerf(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil && os.Geteuid() == 0 {
		if apt, err := exec.LookPath("apt-get"); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, apt, "install", "-y", "-q", "linux-perf")
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			out, err := cmd.CombinedOutput()
			t.Logf("perf missing: apt-get install linux-perf: %v\n%s", err, lastLines(string(out), 3))
		}
	}
	if _, err := perfcheck.Probe(t.TempDir()); err != nil {
		if errors.Is(err, perfcheck.ErrRefused) {
			t.Skipf("perf cannot sample here: %v", err)
		}
		t.Fatalf("perf unusable: %v", err)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

var (
	violationsRE = regexp.MustCompile(`fpcheck perf: (\d+) violations`)
	goBadRE      = regexp.MustCompile(`walk from Go's frame pointer: (\d+)`)
)

// perfStress records the stress corpus built by goBin and returns the exit
// code, the report and the parsed samples.
func perfStress(t *testing.T, bin string) (int, string, []perfcheck.Sample) {
	dir := t.TempDir()
	d := "3s"
	if testing.Short() {
		d = "2s"
	}
	code, stdout, stderr := fpcheck(t, "perf", "-o", dir, "-F", "1999", "-timeout", "3m", "--", bin, "-d", d)
	if code != 0 && code != 1 {
		t.Fatalf("fpcheck perf: exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "perf.script"))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := perfcheck.ParseScript(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return code, stdout, samples
}

// TestPerfStress is issue 3's perf test: with the boundary fixes in the
// toolchain (fpcheck binary is clean on the stress binary), every user-space
// chain perf records over the stress corpus must be symbolizable, loop-free
// and end at a documented root, and callback samples must show the
// goroutine's frames above the cgo call. Without the fixes it reports what
// it found.
func TestPerfStress(t *testing.T) {
	haveCgo(t)
	needPerf(t)
	bin := build(t, goTool(), "./testdata/stress", "stress", nil)
	bcode, bout, _ := fpcheck(t, "binary", bin)
	fixed := bcode == 0
	code, report, samples := perfStress(t, bin)
	t.Logf("fpcheck perf over the stress corpus:\n%s", report)
	if !fixed && isFork() {
		t.Fatalf("fpcheck binary finds violations in the stress binary built by the fork (exit %d):\n%s", bcode, bout)
	}
	if !fixed {
		t.Logf("not asserting: the toolchain under test lacks the boundary fixes (fpcheck binary exit %d):\n%s", bcode, bout)
		fmt.Printf("fpcheck perf (toolchain without boundary fixes): %s\n", violationsRE.FindString(report))
		return
	}
	if code != 0 {
		t.Errorf("fpcheck perf found violations on a toolchain with the boundary fixes")
	}
	// No walk that starts from Go's frame pointer may carry an
	// unsymbolizable or looping frame anywhere. Walks that start from C's
	// (a sample in C built without frame pointers, in the program or in
	// libc, or in a frameless Go leaf called from such C) hand perf a frame
	// pointer no Go change can fix; the report counts them.
	if m := goBadRE.FindStringSubmatch(report); m == nil {
		t.Errorf("report lacks the count of bad chains walked from Go's frame pointer")
	} else if m[1] != "0" {
		t.Errorf("%s samples walked from Go's frame pointer have an unsymbolizable or looping frame", m[1])
	}
	// Callback samples: the chain must continue from the callback through
	// the goroutine's frame at the cgo call (the cgo stub _Cfunc_cLoop) to
	// goexit.
	c := perfcheck.NewChecker(127)
	callbacks, linked := 0, 0
	for i := range samples {
		names := c.Names(&samples[i])
		if !contains(names, "main.goCallback") {
			continue
		}
		callbacks++
		if contains(names, "main._Cfunc_cLoop") && names[len(names)-1] == "runtime.goexit" {
			linked++
		} else if len(callbacks2show) < 3 {
			callbacks2show = append(callbacks2show, strings.Join(names, " <- "))
		}
	}
	if callbacks == 0 {
		t.Errorf("no samples in the cgo callback")
	} else if linked != callbacks {
		t.Errorf("%d of %d callback samples do not reach the goroutine's frames above the cgo call and goexit; e.g.\n%s", callbacks-linked, callbacks, strings.Join(callbacks2show, "\n"))
	}
	fmt.Printf("fpcheck perf (fork with boundary fixes): %s; %d callback samples linked to their goroutine; %s\n", violationsRE.FindString(report), linked, goBadRE.FindString(report))
}

var callbacks2show []string

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestPerfUpstream measures upstream on the same corpus: fpcheck
// perf must find the broken callback chains there.
func TestPerfUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement of upstream; skipped in -short")
	}
	haveCgo(t)
	needPerf(t)
	up := upstreamGo(t)
	bin := build(t, up, "./testdata/stress", "stress-upstream", nil)
	code, report, _ := perfStress(t, bin)
	t.Logf("fpcheck perf over the upstream-built stress corpus:\n%s", report)
	if code != 1 {
		t.Errorf("fpcheck perf: exit %d on the upstream-built stress corpus, want 1 (violations)", code)
	}
	if !strings.Contains(report, "crosscall2 <- ") {
		t.Errorf("no violation names crosscall2")
	}
}
