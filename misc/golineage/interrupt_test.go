package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/lineageraw"
)

// threadsHeld reports whether a thread of pid is in a ptrace stop or has a
// tracer.
func threadsHeld(pid int) bool {
	if len(tracedThreads(pid)) > 0 {
		return true
	}
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range es {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 't' {
			return true
		}
	}
	return false
}

// manyGoroutines starts the fixture that parks 200k goroutines (20k with
// -short).
func manyGoroutines(t *testing.T) *proc {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	exe := fixture(t, "many")
	requireABI(t, exe)
	return start(t, exe, fmt.Sprintf("MANY=%d", n))
}

// TestInterruptRead: SIGINT, SIGTERM or SIGHUP in the middle of a read of
// every goroutine (issue 24) ends golineage with status 130 and nothing
// printed, every thread of the target detached and running. With -stop the
// signal is sent once the target's threads are held (so the read has
// begun: it holds them for seconds); the target must run again within a
// second (the bound; it takes milliseconds), well before the read
// would have ended.
func TestInterruptRead(t *testing.T) {
	p := manyGoroutines(t)
	pid := fmt.Sprint(p.pid())
	cases := []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"ps", "-stop", pid}, syscall.SIGINT},
		{[]string{"stacks", "-all", "-stop", pid}, syscall.SIGTERM},
		{[]string{"waits", "-stop", pid}, syscall.SIGHUP},
		{[]string{"ps", "-json", "-stacks", pid}, syscall.SIGINT},
		{[]string{"tree", pid}, syscall.SIGINT},
		// All threads held for each tick, the first of which reads every
		// goroutine; it writes what it sampled (nothing, here).
		{[]string{"profile", "-wall", "-consistent", "-format", "folded", pid}, syscall.SIGINT},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:len(c.args)-1], " "), func(t *testing.T) {
			stop := slices.Contains(c.args, "-stop") || slices.Contains(c.args, "-consistent")
			// A read that does not stop the target has no outward sign
			// that it began, so the signal follows a delay. A read that
			// ended before it (a fast machine, a small target) tested
			// nothing: try again with half that read's whole time.
			delay := 200 * time.Millisecond
			for attempt := 0; ; attempt++ {
				took, early := interruptRead(t, p, c.args, c.sig, stop, delay)
				if !early {
					break
				}
				if attempt == 3 || took < 20*time.Millisecond {
					t.Skipf("every read ended before the signal (the last in %v): nothing to interrupt", took)
				}
				t.Logf("the read ended in %v, before the signal; again, with the signal after %v", took, took/2)
				delay = took / 2
			}
		})
	}
}

// interruptRead runs golineage with args, sends sig once the read has
// begun (stop: the target's threads are held; otherwise after delay) and
// checks the outcome. early reports a read that ended, successfully,
// before the signal was sent, and took how long it ran.
func interruptRead(t *testing.T, p *proc, args []string, sig syscall.Signal, stop bool, delay time.Duration) (took time.Duration, early bool) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(toolBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if stop {
		// The read has begun once the threads are held.
		for !threadsHeld(p.pid()) {
			select {
			case err := <-done:
				t.Fatalf("golineage ended (%v) before it stopped the target; stderr %q", err, stderr.String())
			default:
			}
			time.Sleep(100 * time.Microsecond)
		}
	} else {
		select {
		case err := <-done:
			if err == nil {
				return time.Since(started), true
			}
			t.Fatalf("golineage failed before the signal: %v; stderr %q", err, stderr.String())
		case <-time.After(delay):
		}
	}
	sent := time.Now()
	cmd.Process.Signal(sig)
	for threadsHeld(p.pid()) && time.Since(sent) < 10*time.Second {
		time.Sleep(100 * time.Microsecond)
	}
	resumed := time.Since(sent)
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("golineage did not end after %v", sig)
	}
	exited := time.Since(sent)
	t.Logf("%v: target running again after %v, golineage exited after %v", sig, resumed, exited)
	if !stop && err == nil {
		// The read ended between the check above and the signal.
		return time.Since(started), true
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want status 130; stderr %q", err, stderr.String())
	}
	if stdout.Len() > 0 && args[0] != "profile" {
		t.Errorf("an interrupted read printed %d bytes", stdout.Len())
	}
	if stop && resumed > time.Second {
		t.Errorf("the target stayed stopped %v after %v", resumed, sig)
	}
	p.checkRunning(t)
	return 0, false
}

// TestReadCanceled: a live read whose context is canceled in the middle
// (while a batch of parked stacks is read) ends with the context's error
// and leaves no thread traced.
func TestReadCanceled(t *testing.T) {
	p, _, _ := startParked(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	walks := 0
	lineageraw.TestHookWalk = func() { walks++; cancel() }
	defer func() { lineageraw.TestHookWalk = nil }()
	_, err := readLive(ctx, p.pid())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("readLive: %v, want context.Canceled", err)
	}
	if walks != 1 {
		t.Errorf("%d batches walked after the cancel, want the one that canceled", walks)
	}
	if tr := tracedThreads(p.pid()); len(tr) > 0 {
		t.Errorf("threads %v still traced", tr)
	}
	p.checkRunning(t)
}

// TestBrokenPipe: golineage whose standard output is closed before it
// writes (piped into head, which has exited) ends quietly with status
// 141, the target running.
func TestBrokenPipe(t *testing.T) {
	p, _, _ := startParked(t)
	cmd := exec.Command(toolBinary(t), "stacks", "-all", fmt.Sprint(p.pid()))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 141 {
		t.Errorf("exit: %v, want status 141", err)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr %q, want nothing", stderr.String())
	}
	p.checkRunning(t)
}

// pollCtx is a context that is canceled once polled n times: a read that
// it interrupts is in its middle by construction.
type pollCtx struct {
	context.Context
	n, polls int
}

func (c *pollCtx) Err() error {
	if c.polls++; c.polls > c.n {
		return context.Canceled
	}
	return nil
}

// TestCoreReadCanceled: a read of a core ends when its context is
// canceled in the middle of the goroutines, with nothing printed.
func TestCoreReadCanceled(t *testing.T) {
	exe, core := goldenParked(t)
	for _, args := range [][]string{{"ps"}, {"stacks", "-all"}, {"tree"}} {
		ctx := &pollCtx{Context: context.Background(), n: 5}
		var stdout, stderr bytes.Buffer
		err := runContext(ctx, append(args, "--core", core, exe), &stdout, &stderr)
		if !errors.Is(err, errInterrupted) || stdout.Len() > 0 {
			t.Errorf("%v: %v, %d bytes printed; want %v and nothing", args, err, stdout.Len(), errInterrupted)
		}
	}
}
