package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/lineageabi"
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
	testHookWalk = func() {
		walks++
		traced = append(traced, tracedThreads(p.pid())...)
	}
	defer func() { testHookWalk = nil }()
	r, err := readLive(p.pid())
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
		r, err := readLive(p.pid())
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
