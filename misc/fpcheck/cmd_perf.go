package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"fpsafe.dev/misc/fpcheck/internal/perfcheck"
)

func cmdPerf(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fpcheck perf", flag.ContinueOnError)
	outDir := fs.String("o", "", "keep perf.data and perf.script in `dir` (default: a temporary directory, removed)")
	freq := fs.Int("F", 999, "sampling frequency in Hz")
	timeout := fs.Duration("timeout", 0, "kill the program after `duration` (0: no limit)")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	input := fs.String("i", "", "check the recorded `file` (perf script -F comm,tid,ip,sym,dso output) instead of running a program")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck perf [-json] [-o DIR] [-F HZ] [-timeout D] -- CMD ARGS...\n"+
			"       fpcheck perf [-json] -i FILE\n\n"+
			"Records CMD with perf record --call-graph fp and checks every user-space chain:\n"+
			"symbolizable, return addresses after calls, no loops, ending at a documented root.\n"+
			"With -i, checks a recorded perf script; the binaries it names must still exist.\n\n%s\nFlags:\n", exitText)
		fs.PrintDefaults()
	}
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if *input != "" {
		if fs.NArg() > 0 {
			return &usageError{"perf: -i FILE takes no command"}
		}
		f, err := os.Open(*input)
		if err != nil {
			return fmt.Errorf("perf: %w", err)
		}
		defer f.Close()
		return checkPerfScript(stdout, f, *jsonOut)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &usageError{}
	}
	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	dir := *outDir
	if dir == "" {
		dir, err = os.MkdirTemp("", "fpcheck-perf")
		if err != nil {
			return fmt.Errorf("perf: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	perf, err := perfcheck.Probe(dir)
	if err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	data := filepath.Join(dir, "perf.data")
	rec := exec.Command(perf, append([]string{"record", "-q", "-e", "cpu-clock", "-F", strconv.Itoa(*freq), "--call-graph", "fp", "-o", data, "--", path}, fs.Args()[1:]...)...)
	rec.Stdin, rec.Stdout, rec.Stderr = os.Stdin, stdout, stderr
	start := time.Now()
	timedOut, rerr := runWithTimeout(rec, *timeout, nil)
	if timedOut {
		return fmt.Errorf("perf: %s timed out after %v", path, *timeout)
	}
	script := exec.Command(perf, "script", "-i", data, "-F", "comm,tid,ip,sym,dso")
	var out, serr bytes.Buffer
	script.Stdout, script.Stderr = &out, &serr
	if err := script.Run(); err != nil {
		return fmt.Errorf("perf: perf script failed: %w: %s", err, strings.TrimSpace(serr.String()))
	}
	if *outDir != "" {
		if err := os.WriteFile(filepath.Join(dir, "perf.script"), out.Bytes(), 0o666); err != nil {
			return fmt.Errorf("perf: %w", err)
		}
	}
	if !*jsonOut {
		fmt.Fprintf(stdout, "fpcheck perf: %s ran %v\n", path, time.Since(start).Round(time.Millisecond))
	}
	err = checkPerfScript(stdout, &out, *jsonOut)
	var fe *findingsError
	if err != nil && !errors.As(err, &fe) {
		return err
	}
	if err == nil && rerr != nil {
		return fmt.Errorf("perf: %s failed (%s)", path, describeExit(rerr))
	}
	return err
}

// checkPerfScript checks the chains of a perf script and writes the report.
func checkPerfScript(stdout io.Writer, script io.Reader, jsonOut bool) error {
	samples, err := perfcheck.ParseScript(script)
	if err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	c := perfcheck.NewChecker(maxStack())
	r := c.Check(samples)
	if jsonOut {
		err := writeJSON(stdout, struct {
			*perfcheck.Result
			Violations int `json:"violations"`
		}{r, r.Violations()})
		if err != nil {
			return err
		}
	} else {
		r.Write(stdout)
	}
	if r.Samples-r.Kinds[perfcheck.KernelOnly] == 0 {
		return errors.New("perf: no user-space samples recorded")
	}
	if r.Violations() > 0 {
		return &findingsError{}
	}
	return nil
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
