package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"fpsafe.dev/misc/fpcheck/internal/runcheck"
	"fpsafe.dev/misc/internal/gobin"
)

// featureState says whether a program's runtime knows GODEBUG=fpunwindcheck.
type featureState int

const (
	featureUnknown featureState = iota // not a Go binary we can read (a script, go run, ...)
	featurePresent
	featureAbsent
)

// runtimeFeature looks for the setting's name in the binary: the runtime
// keeps its GODEBUG names as strings, so a runtime without the setting has
// no such string.
func runtimeFeature(path string) (featureState, *gobin.Binary) {
	b, err := gobin.Open(path)
	if err != nil {
		return featureUnknown, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return featureUnknown, b
	}
	if bytes.Contains(data, []byte("fpunwindcheck")) {
		return featurePresent, b
	}
	return featureAbsent, b
}

func appendGODEBUG(env []string, setting string) []string {
	out := make([]string, 0, len(env)+1)
	cur := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			cur = v
			continue
		}
		out = append(out, e)
	}
	if cur != "" {
		cur += ","
	}
	return append(out, "GODEBUG="+cur+setting)
}

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("killed by signal %v", ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err.Error()
}

// runWithTimeout starts cmd and waits for it; after timeout (if > 0) it sends
// SIGQUIT, for a goroutine dump, then SIGKILL. Interrupts are forwarded.
func runWithTimeout(cmd *exec.Cmd, timeout time.Duration, afterStart func()) (timedOut bool, err error) {
	if err := cmd.Start(); err != nil {
		return false, err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			timedOut = true
			cmd.Process.Signal(syscall.SIGQUIT)
			time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		})
	}
	if afterStart != nil {
		afterStart()
	}
	err = cmd.Wait()
	close(done)
	if timer != nil {
		timer.Stop()
	}
	return timedOut, err
}

func cmdRun(args []string) int {
	fs := flag.NewFlagSet("fpcheck run", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 0, "kill the program after `duration` (0: no limit)")
	quiet := fs.Bool("q", false, "do not copy the program's fpunwindcheck lines to stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck run [-timeout D] [-q] -- CMD ARGS...\n\n"+
			"Runs CMD with GODEBUG=fpunwindcheck=1 added, copies its output, and checks the\n"+
			"runtime's report of frame-pointer unwinds cross-checked against gentraceback.\n"+
			"Exit 0 no mismatch, 1 mismatches, 2 usage error, crash, timeout or no report.\n")
		fs.PrintDefaults()
	}
	if !parseArgs(fs, args) {
		return exitUsage
	}
	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck run: %v\n", err)
		return exitUsage
	}
	feature, bin := runtimeFeature(path)
	if bin != nil {
		defer bin.Close()
	}
	cmd := exec.Command(path, fs.Args()[1:]...)
	cmd.Env = appendGODEBUG(os.Environ(), "fpunwindcheck=1")
	cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck run: %v\n", err)
		return exitUsage
	}
	var p runcheck.Parser
	readDone := make(chan struct{})
	timedOut, werr := runWithTimeout(cmd, *timeout, func() {
		go func() {
			defer close(readDone)
			copyLines(stderr, func(line string) {
				p.Line(line)
				if !*quiet || !strings.Contains(line, runcheck.Prefix) {
					fmt.Fprintln(os.Stderr, line)
				}
			})
		}()
		<-readDone
	})
	r := &p.R
	var sym runcheck.Symbolizer
	if bin != nil {
		sym = func(pc uint64) string {
			if f := bin.FindFunc(pc); f != nil {
				return fmt.Sprintf("%s+%#x", f.Name, pc-f.Entry)
			}
			return ""
		}
	}
	if r.Lines > 0 {
		r.Write(os.Stdout, sym)
	}
	switch {
	case timedOut:
		fmt.Fprintf(os.Stderr, "fpcheck run: %s timed out after %v (%s)\n", path, *timeout, describeExit(werr))
		return exitUsage
	case r.Lines == 0 && feature == featureAbsent:
		fmt.Fprintf(os.Stderr, "fpcheck run: %s's runtime lacks GODEBUG=fpunwindcheck (the binary has no such setting: built by a toolchain without the fpsafe fork's runtime, e.g. upstream Go); nothing was checked\n", path)
		return exitUsage
	case r.Lines == 0 && werr != nil:
		fmt.Fprintf(os.Stderr, "fpcheck run: %s failed (%s) and printed no fpunwindcheck lines\n", path, describeExit(werr))
		return exitUsage
	case r.Lines == 0:
		what := "is not a Go binary fpcheck can read, so whether its runtime has the setting is unknown"
		if feature == featurePresent {
			what = "has the setting; did it exit without running the runtime's exit hooks (e.g. syscall.Exit)?"
		}
		fmt.Fprintf(os.Stderr, "fpcheck run: %s printed no fpunwindcheck lines: it %s\n", path, what)
		return exitUsage
	case !r.HaveTotal:
		st := "exited"
		if werr != nil {
			st = describeExit(werr)
		}
		fmt.Fprintf(os.Stderr, "fpcheck run: %s died before printing the fpunwindcheck total (%s); %d mismatch lines seen\n", path, st, len(r.Mismatches))
		if len(r.Mismatches) > 0 {
			return exitFindings
		}
		return exitUsage
	}
	if err := r.Consistent(); err != nil {
		fmt.Fprintf(os.Stderr, "fpcheck run: inconsistent report: %v\n", err)
		return exitUsage
	}
	if r.Mismatched > 0 || len(r.Mismatches) > 0 {
		return exitFindings
	}
	if werr != nil {
		fmt.Fprintf(os.Stderr, "fpcheck run: %s failed (%s) after a clean report\n", path, describeExit(werr))
		return exitUsage
	}
	if r.Checked == 0 {
		fmt.Fprintf(os.Stderr, "fpcheck run: warning: no unwinds were checked (the program made no profile or trace records)\n")
	}
	return exitClean
}

func copyLines(r io.Reader, f func(string)) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			f(strings.TrimSuffix(line, "\n"))
		}
		if err != nil {
			return
		}
	}
}
