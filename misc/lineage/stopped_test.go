package lineage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/target"
	"fpsafe.dev/misc/lineage"
	"fpsafe.dev/misc/lineage/internal/fixture"
)

// TestStopped: a stopped read of the fixture's parked goroutines equals
// the live read, goroutine by goroutine and frame by frame; while held
// every thread is in tracing stop, and after Resume none is and reads
// fail with ErrResumed.
func TestStopped(t *testing.T) {
	exe, pid := fixture.Start(t)
	time.Sleep(100 * time.Millisecond) // the workers block
	mu := symbol(t, exe, "main.mu")
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	live, err := p.Goroutines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := parked(t, ctx, p.Stack, live)

	s, err := p.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Resume()
	if st := taskStates(t, pid); strings.Trim(st, "t") != "" {
		t.Errorf("held: thread states %q, want every thread in tracing stop (t)", st)
	}
	if len(s.Threads()) == 0 || len(s.Threads()) != len(taskStates(t, pid)) {
		t.Errorf("held: %d threads with registers, /proc lists %d", len(s.Threads()), len(taskStates(t, pid)))
	}
	e, err := lineage.OpenExecutable(exe, p.LoadBias())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, th := range s.Threads() {
		if th.Registers.PC == 0 || th.Registers.SP == 0 {
			t.Errorf("thread %d: registers %+v", th.TID, th.Registers)
		}
		fr, err := s.ThreadStack(ctx, th.TID)
		if err != nil || len(fr) == 0 {
			t.Errorf("thread %d: stack %v, %v", th.TID, fr, err)
		}
		// The same walk in memory served by another reader (here s).
		if served, _ := e.ThreadStack(s, th.Registers); fmt.Sprint(served) != fmt.Sprint(fr) {
			t.Errorf("thread %d: Executable.ThreadStack %v, Stopped.ThreadStack %v", th.TID, served, fr)
		}
	}
	if !locked(t, p.ReadAt, mu) || !locked(t, s.ReadAt, mu) {
		t.Errorf("main.mu reads unlocked")
	}
	held, err := s.Goroutines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := parked(t, ctx, s.Stack, held)
	if got != want {
		t.Errorf("stopped read:\n%s\nlive read:\n%s", got, want)
	}
	for _, g := range held.Goroutines {
		if _, err := s.Stack(ctx, g); err != nil {
			t.Errorf("held: goroutine %d (%s): %v", g.ID, g.State, err)
		}
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if st := taskStates(t, pid); strings.ContainsAny(st, "tT") {
		t.Errorf("resumed: thread states %q, want none stopped", st)
	}
	if _, err := s.Goroutines(ctx); !errors.Is(err, lineage.ErrResumed) {
		t.Errorf("Goroutines after Resume: %v, want ErrResumed", err)
	}
	if err := s.ReadAt(make([]byte, 4), mu); !errors.Is(err, lineage.ErrResumed) {
		t.Errorf("ReadAt after Resume: %v, want ErrResumed", err)
	}
	if _, err := p.Goroutines(ctx); err != nil {
		t.Errorf("live read after Resume: %v", err)
	}
}

// TestStopCancel: the threads are detached once the context is done,
// without Resume, and a Stop with a done context stops nothing.
func TestStopCancel(t *testing.T) {
	_, pid := fixture.Start(t)
	p, err := lineage.OpenPID(context.Background(), pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := p.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := taskStates(t, pid); strings.Trim(st, "t") != "" {
		t.Errorf("held: thread states %q", st)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for strings.ContainsAny(taskStates(t, pid), "tT") {
		if time.Now().After(deadline) {
			t.Fatalf("canceled: threads still stopped: %q", taskStates(t, pid))
		}
		time.Sleep(time.Millisecond)
	}
	s.Resume()
	if _, err := s.Goroutines(context.Background()); !errors.Is(err, lineage.ErrResumed) {
		t.Errorf("Goroutines after cancel: %v, want ErrResumed", err)
	}
	if _, err := p.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Stop with a canceled context: %v", err)
	}
	if st := taskStates(t, pid); strings.ContainsAny(st, "tT") {
		t.Errorf("after a refused stop: thread states %q", st)
	}
}

// parked lists the fixture's parked goroutines (the spawner's children)
// with their stacks, sorted.
func parked(t *testing.T, ctx context.Context, stack func(context.Context, *lineage.Goroutine) ([]lineage.Frame, error), snap *lineage.Snapshot) string {
	var lines []string
	for _, g := range snap.Goroutines {
		if g.Start.Function != "main.worker" && g.Start.Function != "main.locker" {
			continue
		}
		frames, err := stack(ctx, g)
		if err != nil {
			t.Fatalf("goroutine %d: %v", g.ID, err)
		}
		l := fmt.Sprintf("%d parent %d %s %s %s %s %+v", g.ID, g.Parent, g.Start, g.CreatedBy, g.State, g.WaitReason, g.Wait)
		for _, f := range frames {
			l += fmt.Sprintf("\n\t%#x %s %s:%d %v", f.PC, f.Function, f.File, f.Line, f.Inlined)
		}
		lines = append(lines, l)
	}
	if len(lines) != 4 {
		t.Fatalf("%d of the spawner's goroutines, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// taskStates is the State letter of each of pid's threads
// (/proc/PID/task/TID/status).
func taskStates(t *testing.T, pid int) string { return taskStatesExcept(t, pid, 0) }

// TestStopThread: StopThread holds one thread (in tracing stop while fn
// runs, the others not), gives its stack, and detaches it.
func TestStopThread(t *testing.T) {
	_, pid := fixture.Start(t)
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tids, err := target.ListThreads(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		var states string
		var frames []lineage.Frame
		var ferr error
		d, err := p.StopThread(ctx, tid, func(s *lineage.Stopped) {
			states = taskState(t, pid, tid) + taskStatesExcept(t, pid, tid)
			frames, ferr = s.ThreadStack(ctx, tid)
		})
		if err != nil {
			t.Fatal(err)
		}
		if d <= 0 || ferr != nil || len(frames) == 0 {
			t.Errorf("thread %d: held %v, stack %v, %v", tid, d, frames, ferr)
		}
		if states[0] != 't' || strings.ContainsAny(states[1:], "tT") {
			t.Errorf("thread %d held: states %q, want it alone in tracing stop", tid, states)
		}
	}
	if st := taskStates(t, pid); strings.ContainsAny(st, "tT") {
		t.Errorf("after: thread states %q", st)
	}
	if _, err := p.StopThread(ctx, 1<<30, func(*lineage.Stopped) {}); !errors.Is(err, lineage.ErrThreadExited) {
		t.Errorf("StopThread of no thread: %v, want ErrThreadExited", err)
	}
}

// taskState is the State letter of thread tid (/proc/PID/task/TID/status).
func taskState(t *testing.T, pid, tid int) string {
	c, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
	if err != nil {
		return "" // exited
	}
	for _, l := range strings.Split(string(c), "\n") {
		if st, ok := strings.CutPrefix(l, "State:"); ok {
			return strings.TrimSpace(st)[:1]
		}
	}
	return "?"
}

// taskStatesExcept is taskStates without thread tid.
func taskStatesExcept(t *testing.T, pid, tid int) string {
	tids, err := target.ListThreads(pid)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, other := range tids {
		if other != tid {
			b.WriteString(taskState(t, pid, other))
		}
	}
	return b.String()
}
