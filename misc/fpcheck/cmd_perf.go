package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"fpsafe.dev/misc/fpcheck/internal/perfcheck"
)

func cmdPerf(args []string) int {
	fs := flag.NewFlagSet("fpcheck perf", flag.ContinueOnError)
	outDir := fs.String("o", "", "keep perf.data and perf.script in `dir` (default: a temporary directory, removed)")
	freq := fs.Int("F", 999, "sampling frequency in Hz")
	timeout := fs.Duration("timeout", 0, "kill the program after `duration` (0: no limit)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck perf [-o DIR] [-F HZ] [-timeout D] -- CMD ARGS...\n\n"+
			"Records CMD with perf record --call-graph fp and checks every user-space chain:\n"+
			"symbolizable, return addresses after calls, no loops, ending at a documented root.\n"+
			"Exit 0 clean, 1 violations, 2 usage error, perf unusable, or the program failed.\n")
		fs.PrintDefaults()
	}
	if !parseArgs(fs, args) {
		return exitUsage
	}
	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck perf: %v\n", err)
		return exitUsage
	}
	dir := *outDir
	if dir == "" {
		dir, err = os.MkdirTemp("", "fpcheck-perf")
		if err != nil {
			fmt.Fprintf(os.Stderr, "fpcheck perf: %v\n", err)
			return exitUsage
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o777); err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck perf: %v\n", err)
		return exitUsage
	}
	perf, err := perfcheck.Probe(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck perf: %v\n", err)
		return exitUsage
	}
	data := filepath.Join(dir, "perf.data")
	rec := exec.Command(perf, append([]string{"record", "-q", "-e", "cpu-clock", "-F", strconv.Itoa(*freq), "--call-graph", "fp", "-o", data, "--", path}, fs.Args()[1:]...)...)
	rec.Stdin, rec.Stdout, rec.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	timedOut, rerr := runWithTimeout(rec, *timeout, nil)
	if timedOut {
		fmt.Fprintf(os.Stderr, "fpcheck perf: %s timed out after %v\n", path, *timeout)
		return exitUsage
	}
	script := exec.Command(perf, "script", "-i", data, "-F", "comm,tid,ip,sym,dso")
	var out, serr bytes.Buffer
	script.Stdout, script.Stderr = &out, &serr
	if err := script.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck perf: perf script failed: %v: %s\n", err, strings.TrimSpace(serr.String()))
		return exitUsage
	}
	if *outDir != "" {
		os.WriteFile(filepath.Join(dir, "perf.script"), out.Bytes(), 0o666)
	}
	samples, err := perfcheck.ParseScript(&out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck perf: %v\n", err)
		return exitUsage
	}
	c := perfcheck.NewChecker(maxStack())
	r := c.Check(samples)
	fmt.Printf("fpcheck perf: %s ran %v\n", path, time.Since(start).Round(time.Millisecond))
	r.Write(os.Stdout)
	if r.Samples-r.Kinds[perfcheck.KernelOnly] == 0 {
		fmt.Fprintf(os.Stderr, "fpcheck perf: no user-space samples recorded\n")
		return exitUsage
	}
	if r.Violations() > 0 {
		return exitFindings
	}
	if rerr != nil {
		fmt.Fprintf(os.Stderr, "fpcheck perf: %s failed (%s)\n", path, describeExit(rerr))
		return exitUsage
	}
	return exitClean
}

// maxStack is perf's call-chain depth limit.
func maxStack() int {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_stack")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return n
		}
	}
	return 127
}
