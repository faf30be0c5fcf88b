package lineage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"fpsafe.dev/misc/lineage"
)

var exampleDone = make(chan struct{})

// exampleWorker waits until the example ends.
func exampleWorker() { <-exampleDone }

// This example reads the goroutines of the running program itself (a test
// built by the fork's toolchain) and finds one it started.
func Example() {
	go exampleWorker()
	defer close(exampleDone)
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	for try := 0; try < 100; try++ { // until the worker has blocked
		snap, err := p.Goroutines(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, g := range snap.Goroutines {
			if g.Start.Function != "fpsafe.dev/misc/lineage_test.exampleWorker" || g.State != "waiting" {
				continue
			}
			fmt.Println("start:", g.Start.Function)
			fmt.Println("created by:", g.CreatedBy.Function)
			fmt.Println("state:", g.State, g.WaitReason, g.Wait.Kind)
			frames, err := p.Stack(ctx, g)
			if err != nil {
				fmt.Println(err)
				return
			}
			for _, f := range frames {
				if f.Function == g.Start.Function {
					fmt.Println("its stack has", f.Function)
				}
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("worker not found")
	// Output:
	// start: fpsafe.dev/misc/lineage_test.exampleWorker
	// created by: fpsafe.dev/misc/lineage_test.Example
	// state: waiting chan receive chan
	// its stack has fpsafe.dev/misc/lineage_test.exampleWorker
}

var stacksDone = make(chan struct{})

// stacksWorker blocks below a call, until the example ends.
//
//go:noinline
func stacksWorker(n int) {
	if n > 0 {
		stacksWorker(n - 1)
		return
	}
	<-stacksDone
}

// This example reads every goroutine of the running program with its
// stack, in one pass, and prints a worker it started as the program's own
// goroutine dump would: only the frames the dump shows (DumpFrames), and
// no goroutine of the runtime's own (System).
func ExampleProcess_GoroutineStacks() {
	go stacksWorker(2)
	defer close(stacksDone)
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	for try := 0; try < 100; try++ { // until the worker has blocked
		snap, err := p.GoroutineStacks(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, g := range snap.Goroutines {
			if g.System || g.Start.Function != "fpsafe.dev/misc/lineage_test.stacksWorker" || g.State != lineage.StateWaiting {
				continue
			}
			fmt.Printf("[%s] %s, started by a wrapper: %v\n", g.WaitReason, g.Start.Function, g.Wrapper.Function != "")
			for _, f := range lineage.DumpFrames(g.Stack) {
				fmt.Println(f.Function)
			}
			fmt.Println("created by", g.CreatedBy.Function)
			return
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("worker not found")
	// Output:
	// [chan receive] fpsafe.dev/misc/lineage_test.stacksWorker, started by a wrapper: true
	// fpsafe.dev/misc/lineage_test.stacksWorker
	// fpsafe.dev/misc/lineage_test.stacksWorker
	// fpsafe.dev/misc/lineage_test.stacksWorker
	// created by fpsafe.dev/misc/lineage_test.ExampleProcess_GoroutineStacks
}

// This example tells apart the errors of opening a process.
func ExampleOpenPID_errors() {
	_, err := lineage.OpenPID(context.Background(), -1, nil)
	switch {
	case errors.Is(err, lineage.ErrNoProcess):
		fmt.Println("no such process")
	case errors.Is(err, lineage.ErrExited):
		fmt.Println("the process has exited")
	case errors.Is(err, lineage.ErrPermission):
		fmt.Println("permission denied: run as the process's user, or with CAP_SYS_PTRACE")
	case errors.Is(err, lineage.ErrNotGo), errors.Is(err, lineage.ErrNoLineage):
		fmt.Println("not a program built by the fpsafe toolchain")
	case errors.Is(err, lineage.ErrVersion):
		var ve *lineage.VersionError
		errors.As(err, &ve)
		fmt.Println("lineage ABI version", ve.Found)
	case err != nil:
		fmt.Println(err)
	}
	// Output:
	// no such process
}

// This example stops a process, prints every goroutine with its innermost
// frame (running ones too: their threads' registers are known while the
// process is held) and lets it run again. It is not run by go test: it
// needs another process (a process cannot trace itself).
func ExampleProcess_Stop() {
	pid := 12345 // a program built by the fork's toolchain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel() // would resume the process too
	p, err := lineage.OpenPID(ctx, pid, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	s, err := p.Stop(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Resume()
	snap, err := s.Goroutines(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range snap.Goroutines {
		frames, err := s.Stack(ctx, g)
		if err != nil || len(frames) == 0 {
			fmt.Println(g.ID, g.State, err)
			continue
		}
		fmt.Println(g.ID, g.State, frames[0].Function)
	}
}

var watchDone = make(chan struct{})

//go:noinline
func watchWorker() { <-watchDone }

// This example counts parked goroutines tick after tick, as a wall-clock
// profiler does: the Watcher reads again only what changed, so a worker
// that stays parked is added once and never read again until it ends.
func ExampleProcess_Watch() {
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	w, err := p.Watch()
	if err != nil {
		fmt.Println(err)
		return
	}
	worker := func(gs []*lineage.Goroutine) *lineage.Goroutine {
		for _, g := range gs {
			if g.Start.Function == "fpsafe.dev/misc/lineage_test.watchWorker" && g.State == lineage.StateWaiting {
				return g
			}
		}
		return nil
	}
	go watchWorker()
	var parked *lineage.Goroutine
	for tick := 0; tick < 100 && parked == nil; tick++ { // until the worker has blocked
		_, added, err := w.Changes(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		parked = worker(added)
		time.Sleep(time.Millisecond)
	}
	if parked == nil {
		fmt.Println("worker not found")
		return
	}
	fmt.Println("added:", parked.Start.Function, parked.WaitReason)
	for range 3 {
		gone, added, err := w.Changes(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		if worker(added) != nil || slices.Contains(gone, parked) {
			fmt.Println("the parked worker was read again")
		}
	}
	close(watchDone)
	for tick := 0; tick < 100; tick++ { // until the worker has ended
		gone, _, err := w.Changes(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		if slices.Contains(gone, parked) {
			fmt.Println("gone:", parked.Start.Function)
			return
		}
		time.Sleep(time.Millisecond)
	}
	// Output:
	// added: fpsafe.dev/misc/lineage_test.watchWorker chan receive
	// gone: fpsafe.dev/misc/lineage_test.watchWorker
}
