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
	featureUnlinked // the setting exists, but the program links no unwind to check
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
	if !bytes.Contains(data, []byte("fpunwindcheck")) {
		return featureAbsent, b
	}
	// The fork links the check only into programs that can read a
	// profile or trace (doc/profiling-fp.md, "What a program links").
	if b.LookupFunc("runtime.fpunwindcheckReport") == nil {
		return featureUnlinked, b
	}
	return featurePresent, b
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

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fpcheck run", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 0, "kill the program after `duration` (0: no limit)")
	quiet := fs.Bool("q", false, "do not copy the program's fpunwindcheck lines to stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck run [-timeout D] [-q] -- CMD ARGS...\n\n"+
			"Runs CMD with GODEBUG=fpunwindcheck=2 added, copies its output, and checks the\n"+
			"runtime's report of frame-pointer unwinds cross-checked against gentraceback.\n"+
			"A crash, a timeout or a missing report is a failure.\n\n%s\nFlags:\n", exitText)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	feature, bin := runtimeFeature(path)
	if bin != nil {
		defer bin.Close()
	}
	cmd := exec.Command(path, fs.Args()[1:]...)
	cmd.Env = appendGODEBUG(os.Environ(), "fpunwindcheck=2")
	cmd.Stdin, cmd.Stdout = os.Stdin, stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	var p runcheck.Parser
	readDone := make(chan struct{})
	timedOut, werr := runWithTimeout(cmd, *timeout, func() {
		go func() {
			defer close(readDone)
			copyLines(pipe, func(line string) {
				p.Line(line)
				if !*quiet || !strings.Contains(line, runcheck.Prefix) {
					fmt.Fprintln(stderr, line)
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
		r.Write(stdout, sym)
	}
	return judgeRun(r, path, feature, *timeout, timedOut, werr, stderr)
}

// judgeRun turns the outcome of a run into run's error.
func judgeRun(r *runcheck.Report, path string, feature featureState, timeout time.Duration, timedOut bool, werr error, stderr io.Writer) error {
	switch {
	case timedOut:
		return fmt.Errorf("run: %s timed out after %v (%s)", path, timeout, describeExit(werr))
	case r.Lines == 0 && feature == featureAbsent:
		return fmt.Errorf("run: %s's runtime lacks GODEBUG=fpunwindcheck (the binary has no such setting: built by a toolchain without the fpsafe fork's runtime, e.g. upstream Go); nothing was checked", path)
	case r.Lines == 0 && feature == featureUnlinked:
		return fmt.Errorf("run: %s reads no profile or trace (it links neither runtime/pprof nor the runtime's profile and trace functions), so its runtime records no frame-pointer unwind and links no GODEBUG=fpunwindcheck; nothing was checked", path)
	case r.Lines == 0 && werr != nil:
		return fmt.Errorf("run: %s failed (%s) and printed no fpunwindcheck lines", path, describeExit(werr))
	case r.Lines == 0:
		what := "is not a Go binary fpcheck can read, so whether its runtime has the setting is unknown"
		if feature == featurePresent {
			what = "has the setting; did it exit without running the runtime's exit hooks (e.g. syscall.Exit)?"
		}
		return fmt.Errorf("run: %s printed no fpunwindcheck lines: it %s", path, what)
	case !r.HaveTotal:
		st := "exited"
		if werr != nil {
			st = describeExit(werr)
		}
		msg := fmt.Sprintf("run: %s died before printing the fpunwindcheck total (%s); %d mismatch lines seen", path, st, len(r.Mismatches))
		if len(r.Mismatches) > 0 {
			return &findingsError{msg}
		}
		return errors.New(msg)
	}
	if err := r.Consistent(); err != nil {
		return fmt.Errorf("run: inconsistent report: %w", err)
	}
	if r.Mismatched > 0 || len(r.Mismatches) > 0 {
		return &findingsError{}
	}
	if werr != nil {
		return fmt.Errorf("run: %s failed (%s) after a clean report", path, describeExit(werr))
	}
	if r.Checked == 0 {
		fmt.Fprintf(stderr, "fpcheck run: warning: no unwinds were checked (the program made no profile or trace records)\n")
	}
	return nil
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
