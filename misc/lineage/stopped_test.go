package lineage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	// The batch read of the held process: every goroutine has a stack,
	// the one Stack walks.
	batch, err := s.GoroutineStacks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Goroutines) != len(held.Goroutines) {
		t.Errorf("held: GoroutineStacks read %d goroutines, Goroutines %d", len(batch.Goroutines), len(held.Goroutines))
	}
	for i, g := range batch.Goroutines {
		one, _ := s.Stack(ctx, held.Goroutines[i])
		if len(g.Stack) == 0 || g.StackErr != nil || fmt.Sprint(g.Stack) != fmt.Sprint(one) {
			t.Errorf("held: goroutine %d (%s): batch stack %v (%v), Stack %v", g.ID, g.State, g.Stack, g.StackErr, one)
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

// TestOnTracerThread: a sampling loop in OnTracerThread runs on the
// thread that holds the stops, so StopThread's fn runs on the loop's own
// thread (no hand-off per stop); there StopThread holds one thread, and
// Stop every thread until Resume, even after Stop's context is done.
// FastStops leaves the threads' states out. ThreadIDs lists /proc's
// threads.
func TestOnTracerThread(t *testing.T) {
	_, pid := fixture.Start(t)
	ctx := context.Background()
	for _, fast := range []bool{false, true} {
		p, err := lineage.OpenPID(ctx, pid, &lineage.Options{FastStops: fast})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		tids, err := p.ThreadIDs()
		if err != nil {
			t.Fatal(err)
		}
		if want := procTasks(t, pid); fmt.Sprint(tids) != fmt.Sprint(want) {
			t.Errorf("ThreadIDs %v, /proc/%d/task lists %v", tids, pid, want)
		}
		var loopTID int
		var fnTIDs []int
		var held, afterCancel, resumed string
		var stateless []bool
		var s *lineage.Stopped
		var stopErr, readErr error
		err = p.OnTracerThread(func() {
			loopTID = unix.Gettid()
			for _, tid := range tids {
				_, err := p.StopThread(ctx, tid, func(st *lineage.Stopped) {
					fnTIDs = append(fnTIDs, unix.Gettid())
					if st := taskState(t, pid, tid) + taskStatesExcept(t, pid, tid); st[0] != 't' || strings.ContainsAny(st[1:], "tT") {
						t.Errorf("thread %d held: states %q, want it alone in tracing stop", tid, st)
					}
					for _, th := range st.Threads() {
						stateless = append(stateless, th.State == "")
					}
				})
				if err != nil && !errors.Is(err, lineage.ErrThreadExited) {
					stopErr = err
					return
				}
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s, stopErr = p.Stop(cctx)
			if stopErr != nil {
				return
			}
			held = taskStates(t, pid)
			cancel()
			time.Sleep(50 * time.Millisecond)
			afterCancel = taskStates(t, pid)
			_, readErr = s.Goroutines(ctx)
			for _, th := range s.Threads() {
				stateless = append(stateless, th.State == "")
			}
			s.Resume()
			resumed = taskStates(t, pid)
		})
		if err != nil || stopErr != nil {
			t.Fatalf("FastStops %v: OnTracerThread: %v, %v", fast, err, stopErr)
		}
		for _, tid := range fnTIDs {
			if tid != loopTID {
				t.Errorf("FastStops %v: StopThread's fn ran on thread %d, the loop on %d", fast, tid, loopTID)
			}
		}
		for _, sl := range stateless {
			if sl != fast {
				t.Errorf("FastStops %v: a thread's State is empty: %v", fast, sl)
				break
			}
		}
		if strings.Trim(held, "t") != "" || strings.Trim(afterCancel, "t") != "" {
			t.Errorf("FastStops %v: held: thread states %q, after the context is done %q, want all in tracing stop", fast, held, afterCancel)
		}
		if readErr != nil {
			t.Errorf("FastStops %v: Goroutines while held: %v", fast, readErr)
		}
		if strings.ContainsAny(resumed, "tT") {
			t.Errorf("FastStops %v: resumed: thread states %q", fast, resumed)
		}
		if _, err := s.Goroutines(ctx); !errors.Is(err, lineage.ErrResumed) || s.Held() <= 0 {
			t.Errorf("FastStops %v: after Resume: Goroutines %v, want ErrResumed; held %v", fast, err, s.Held())
		}
		// Outside the loop, StopThread's fn runs on the same kept thread.
		var fnTID int
		if _, err := p.StopThread(ctx, pid, func(*lineage.Stopped) { fnTID = unix.Gettid() }); err != nil || fnTID != loopTID {
			t.Errorf("FastStops %v: StopThread outside the loop: fn on thread %d (%v), the loop ran on %d", fast, fnTID, err, loopTID)
		}
	}
}

// procTasks lists /proc/PID/task, ascending.
func procTasks(t *testing.T, pid int) []int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	sort.Ints(tids)
	return tids
}
