package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
	"fpsafe.dev/misc/lineage"
)

// busyChain is the busy fixture's worker stack below main.work, outermost
// last, as a thread shows it.
var busyChain = []string{"main.work", "main.worker", "main.main.gowrap1", "runtime.goexit"}

// TestSFrameStacks checks golineage's stacks of the busy fixture, built with
// its SFrame table and without (-ldflags=-sframe=false). Threads are stopped
// many times and unwound as the stacks and profile commands do: wherever a
// worker is stopped (in the frameless leaf main.work, in main.worker's
// prologue or epilogue, or in its body) the walk must be exactly the
// worker's chain, with the table and by frame pointers alone. Goroutines
// that async preemption stopped in main.work (asyncPreempt was injected
// into the leaf, without a call instruction) are where the two differ: with
// the table, stacks -all shows main.worker under main.work, live and from a
// core; by frame pointers the walk skips it.
func TestSFrameStacks(t *testing.T) {
	for _, v := range []struct {
		name  string
		flags []string
		table bool
	}{
		{"sframe", nil, true},
		{"framepointers", []string{"-ldflags=-sframe=false"}, false},
	} {
		t.Run(v.name, func(t *testing.T) {
			exe := fixture(t, "busy", v.flags...)
			requireABI(t, exe)
			bin, err := gobin.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer bin.Close()
			if has := stack.Table(bin) != nil; has != v.table {
				if v.table {
					t.Skip("skipping: the fixture has no SFrame table; set GOLINEAGE_FIXTURE_GO to a toolchain that emits one")
				}
				t.Fatalf("%s linked with -sframe=false has an SFrame table", exe)
			}
			// Two Ps for eight busy goroutines: six are always parked by
			// async preemption, whatever the machine's CPU count.
			p := start(t, exe, "GOMAXPROCS=2", "GODEBUG=asyncpreemptoff=0")
			threadChains(t, bin, p.pid())

			// Goroutines parked by async preemption.
			var ok, skipped int
			for try := 0; try < 20 && ok+skipped == 0; try++ {
				out, stderr, code := tool(t, "stacks", "-all", strconv.Itoa(p.pid()))
				if code != 0 {
					t.Fatalf("stacks -all: exit %d: %s", code, stderr)
				}
				ok, skipped = preemptedLeaves(out)
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("goroutines preempted in main.work: %d with main.worker, %d without", ok, skipped)
			switch {
			case v.table && (skipped > 0 || ok == 0):
				t.Errorf("with the table: %d preempted goroutines lost main.worker, %d kept it (want all, and at least one)", skipped, ok)
			case !v.table && skipped == 0:
				t.Errorf("by frame pointers: no preempted goroutine lost main.worker (%d kept it): the test no longer shows the blind spot", ok)
			}
			if !v.table {
				return
			}
			core := gcore(t, p.pid())
			out, stderr, code := tool(t, "stacks", "-all", "--core", core, exe)
			if code != 0 {
				t.Fatalf("stacks -all --core: exit %d: %s", code, stderr)
			}
			ok, skipped = preemptedLeaves(out)
			t.Logf("core: goroutines preempted in main.work: %d with main.worker, %d without", ok, skipped)
			if skipped > 0 {
				t.Errorf("core: %d preempted goroutines lost main.worker", skipped)
			}
		})
	}
}

// threadChains stops the busy fixture's threads many times and checks each
// walk that reaches a worker's frames.
func threadChains(t *testing.T, bin *gobin.Binary, pid int) {
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, pid, &lineage.Options{NoLineage: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	bias := p.LoadBias()
	var leaf, frameless, body, bad int
	deadline := time.Now().Add(2 * time.Second)
	for stops := 0; stops < 150 && time.Now().Before(deadline); stops++ {
		s, err := p.Stop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer s.Resume()
			for _, th := range s.Threads() {
				w := stack.Unwind(s, bin, bias, target.Regs(th.Registers))
				names := walkNames(bin, bias, w)
				if len(names) == 0 || names[0] != "main.work" && names[0] != "main.worker" {
					continue
				}
				want := busyChain
				if names[0] == "main.worker" {
					want = busyChain[1:]
				}
				if !slices.Equal(names, want) {
					if bad++; bad <= 3 {
						t.Errorf("thread stopped at %#x: stack %v, want %v", th.Registers.PC, names, want)
					}
					continue
				}
				pc := th.Registers.PC - bias
				f := bin.FindFunc(pc)
				switch spd := f.SPDelta(pc); {
				case names[0] == "main.work":
					leaf++
				case !fpchain.InFrameRecord(fpchain.Frame{Arch: bin.Arch, PC: pc, HaveRegs: true, SPDelta: spd, SP: th.Registers.SP, FP: th.Registers.FP}):
					frameless++ // main.worker's prologue or epilogue
				default:
					body++
				}
			}
		}()
		time.Sleep(time.Millisecond)
	}
	t.Logf("threads in a worker: %d in the frameless leaf main.work, %d in main.worker's prologue or epilogue, %d in its body; %d wrong", leaf, frameless, body, bad)
	if leaf == 0 {
		t.Error("no thread was stopped in main.work")
	}
}

// walkNames names a walk's functions (return addresses looked up at the
// call).
func walkNames(bin *gobin.Binary, bias uint64, w stack.Walk) []string {
	var names []string
	for i, pc := range w.PCs {
		lookup := pc - bias
		if i > 0 && !w.IsSignal(i) {
			lookup--
		}
		name := "?"
		if f := bin.FindFunc(lookup); f != nil {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// preemptedLeaves counts, in stacks -all output, the goroutine stacks where
// runtime.asyncPreempt interrupted main.work, by whether main.worker
// follows main.work.
func preemptedLeaves(out string) (withCaller, without int) {
	for _, block := range strings.Split(out, "\n\n") {
		if !strings.HasPrefix(block, "goroutine ") {
			continue
		}
		var funcs []string
		for _, l := range strings.Split(block, "\n") {
			if strings.HasSuffix(l, "(...)") && !strings.HasPrefix(l, "\t") {
				funcs = append(funcs, strings.TrimSuffix(l, "(...)"))
			}
		}
		i := slices.Index(funcs, "main.work")
		if i < 1 || funcs[i-1] != "runtime.asyncPreempt" {
			continue
		}
		if i+1 < len(funcs) && funcs[i+1] == "main.worker" {
			withCaller++
		} else {
			without++
		}
	}
	return withCaller, without
}
