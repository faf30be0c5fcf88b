package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/lineageraw"
	"fpsafe.dev/misc/internal/stack"
)

// tracedThreads lists the threads of pid that a tracer holds.
func tracedThreads(pid int) []string {
	var out []string
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	re := regexp.MustCompile(`TracerPid:\s+(\d+)`)
	for _, e := range es {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name()))
		if m := re.FindSubmatch(b); m != nil && string(m[1]) != "0" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestLiveReadStops: the default read of a live process stops each thread
// once, alone, and walks the parked goroutines' stacks with no thread
// stopped; what it reads is the program's own dump, as is what -stop (every
// thread stopped for the whole read) reads.
func TestLiveReadStops(t *testing.T) {
	p, _, dump := startParked(t)
	var walks int
	var traced []string
	lineageraw.TestHookWalk = func() {
		walks++
		traced = append(traced, tracedThreads(p.pid())...)
	}
	defer func() { lineageraw.TestHookWalk = nil }()
	r, err := readLive(context.Background(), p.pid())
	if err != nil {
		t.Fatal(err)
	}
	st := r.stats
	if len(st.stops) == 0 || len(st.stops) != len(r.threads) {
		t.Errorf("%d stops for %d threads, want one per thread", len(st.stops), len(r.threads))
	}
	seen := map[int]bool{}
	for _, s := range st.stops {
		if s.threads != 1 {
			t.Errorf("a stop held %d threads together, want 1", s.threads)
		}
		if seen[s.tid] {
			t.Errorf("thread %d stopped twice", s.tid)
		}
		seen[s.tid] = true
	}
	for _, th := range r.threads {
		if !seen[th.TID] {
			t.Errorf("thread %d read without its own stop", th.TID)
		}
	}
	if walks == 0 {
		t.Error("no parked stack was walked")
	}
	if len(traced) > 0 {
		t.Errorf("threads %v were traced while parked stacks were read", traced)
	}
	if st.reg.Torn != 0 {
		t.Errorf("%d goroutines of a quiet program torn", st.reg.Torn)
	}
	p.checkRunning(t)

	for _, mode := range [][]string{{"ps", "-json", "-stacks"}, {"ps", "-json", "-stacks", "-stop"}} {
		out, errOut, code := tool(t, append(mode, fmt.Sprint(p.pid()))...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", mode, code, errOut)
		}
		checkAgainstDump(t, strings.Join(mode, " "), out, dump, 13)
	}
	out, errOut, code := tool(t, "ps", "-stats", fmt.Sprint(p.pid()))
	if code != 0 || !strings.Contains(errOut, "golineage: live read of") || !strings.Contains(out, "main.worker") {
		t.Errorf("ps -stats: exit %d\nstderr: %s\nstdout: %s", code, errOut, out)
	}
}

// TestLiveReadChurn reads a program whose goroutines keep parking and
// waking: goroutines that change while read are read again (counted), and
// every stack kept is whole.
func TestLiveReadChurn(t *testing.T) {
	exe := fixture(t, "parkwake")
	requireABI(t, exe)
	p := start(t, exe)
	want := []string{"time.Sleep", "main.churn.func1"}
	for range 11 {
		want = append(want, "main.deep")
	}
	want = append(want, "main.churn")
	var retried, reads int
	deadline := time.Now().Add(20 * time.Second)
	for reads < 5 || retried == 0 && time.Now().Before(deadline) {
		reads++
		r, err := readLive(context.Background(), p.pid())
		if err != nil {
			t.Fatal(err)
		}
		retried += r.stats.reg.Retried
		n := 0
		for _, g := range r.set.gs {
			if g.TID != 0 || g.Status != lineageabi.StatusWaiting || g.WaitReason != "sleep" {
				continue
			}
			n++
			var got []string
			for _, l := range g.Frames {
				if !strings.HasPrefix(l.Func, "runtime.") {
					got = append(got, l.Func)
				}
			}
			if g.Stop != "" || !slices.Equal(got, want) {
				t.Fatalf("goroutine %d [sleep]: stack %q (walk ended: %q), want %q", g.Goid, got, g.Stop, want)
			}
		}
		if n == 0 {
			t.Fatalf("read %d: no sleeping goroutine read whole (stats %+v)", reads, r.stats.reg)
		}
	}
	if retried == 0 {
		t.Errorf("%d reads of 200 churning goroutines re-read none", reads)
	}
	t.Logf("%d reads, %d goroutines re-read", reads, retried)
	p.checkRunning(t)
}

// TestProfileWallChurn: a wall-clock profile of goroutines that keep
// parking and waking reads the ones that changed again, tick after tick,
// into their places in its cache's plan: every sample of a sleeping
// goroutine holds its whole stack, and the 100 goroutines that stay parked
// are in every tick.
func TestProfileWallChurn(t *testing.T) {
	exe := fixture(t, "parkwake")
	requireABI(t, exe)
	p := start(t, exe)
	path := filepath.Join(t.TempDir(), "wall.pb.gz")
	_, stderr, code := tool(t, "profile", "-wall", "-hz", "20", "-duration", "2s", "-o", path, strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p.checkRunning(t)
	deep := func(leaf, root string) []string {
		out := []string{leaf}
		for range 11 {
			out = append(out, "main.deep")
		}
		return append(out, root)
	}
	want := map[string][]string{
		"sleep":        append([]string{"time.Sleep"}, deep("main.churn.func1", "main.churn")...),
		"chan receive": deep("main.parked.func1", "main.parked"),
	}
	count := map[string]int64{}
	for _, s := range readProfile(t, path).Sample {
		st := s.Label["state"]
		if len(st) != 1 || want[st[0]] == nil {
			continue
		}
		var funcs []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if !strings.HasPrefix(ln.Function.Name, "runtime.") {
					funcs = append(funcs, ln.Function.Name)
				}
			}
		}
		if w := want[st[0]]; len(funcs) < len(w) || !slices.Equal(funcs[:len(w)], w) {
			t.Fatalf("a sample in state %q: stack %q, want it to start with %q", st[0], funcs, w)
		}
		count[st[0]] += s.Value[0]
	}
	if n := count["chan receive"]; n < 100*10 || n%100 != 0 {
		t.Errorf("%d samples of the 100 parked goroutines in about 40 ticks: want all 100 in every tick", n)
	}
	if count["sleep"] == 0 {
		t.Error("no sample of a sleeping goroutine")
	}
}

// TestStateOfThreadStack: a goroutine shown with its thread's stack is in
// the state its g had when the thread was read, not the one the registry,
// read later, found: a goroutine read in a system call on its thread and
// running by the time of the registry read is shown in the system call,
// and one read running on its thread and parked later is shown running.
func TestStateOfThreadStack(t *testing.T) {
	inWrite := []stack.Loc{{Func: "internal/runtime/syscall.Syscall6"}, {Func: "syscall.write"}, {Func: "main.log"}}
	gs := []lineageabi.Goroutine{
		{Goid: 5, Status: lineageabi.StatusRunning},
		{Goid: 6, Status: lineageabi.StatusWaiting, WaitReason: "chan receive", WaitChans: []uint64{0x9000}},
	}
	threads := []stack.Thread{{TID: 10, Goid: 5, Frames: inWrite}, {TID: 11, Goid: 6, Frames: inWrite[2:]}}
	atThread := map[uint64]*lineageabi.Goroutine{
		5: {Goid: 5, Status: lineageabi.StatusSyscall},
		6: {Goid: 6, Status: lineageabi.StatusRunning},
	}
	set := newGoroutineSet(&snapshot{}, "", gs, nil, threads, atThread, 0)
	want := map[uint64]string{5: "syscall", 6: "running"}
	for _, g := range set.gs {
		if g.state() != want[g.Goid] || g.TID == 0 || len(g.Frames) == 0 || g.waitObject() != "" {
			t.Errorf("goroutine %d: state %q on thread %d, %d frames, waits on %q; want %s with its thread's stack", g.Goid, g.state(), g.TID, len(g.Frames), g.waitObject(), want[g.Goid])
		}
	}
}
