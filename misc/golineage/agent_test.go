package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"fpsafe.dev/misc/golineage/internal/agent"
	"fpsafe.dev/misc/golineage/internal/otlpout"
)

// syncBuffer is a bytes.Buffer written by one goroutine and read by
// another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// memSink keeps every profile exported, and when each process's first one
// came.
type memSink struct {
	mu    sync.Mutex
	ps    []agent.Profile
	first map[int]time.Time
}

func (m *memSink) Export(ps []agent.Profile) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.first == nil {
		m.first = map[int]time.Time{}
	}
	for _, p := range ps {
		if _, ok := m.first[p.Process.PID]; !ok {
			m.first[p.Process.PID] = time.Now()
		}
	}
	m.ps = append(m.ps, ps...)
}

// of returns the profiles of process pid.
func (m *memSink) of(pid int) []agent.Profile {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []agent.Profile
	for _, p := range m.ps {
		if p.Process.PID == pid {
			out = append(out, p)
		}
	}
	return out
}

// TestAgent runs the node agent over fork-built programs, one started
// before it and one after, a Go program without the lineage ABI and a
// process of another program. The fork-built ones get profiles, named by
// their service, whose leaf samples continue through their creators' go
// statements to main; the program started later is picked up, and its
// exit ends its profiles with a final one; the others get none and are
// counted; nothing stays attached.
func TestAgent(t *testing.T) {
	requireEBPF(t)
	treeExe := fixture(t, "tree")
	requireABI(t, treeExe)
	tree := start(t, treeExe, "OTEL_SERVICE_NAME=tree-service")
	nodes, leaves := parseTree(t, tree.report)
	noABI := start(t, withoutABI(t, fixture(t, "blocked")))
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	sink := &memSink{}
	var log syncBuffer
	a, err := agent.New(agent.Config{Hz: 199, Interval: time.Second, Log: &log}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	time.Sleep(1500 * time.Millisecond)
	late := start(t, fixture(t, "busy"))
	lateStart := time.Now()
	for len(sink.of(late.pid())) == 0 {
		if time.Since(lateStart) > 5*time.Second {
			t.Fatalf("no profile of process %d started after the agent within 5s; log:\n%s", late.pid(), log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	late.cmd.Process.Kill()
	late.cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; {
		ps := sink.of(late.pid())
		if ps[len(ps)-1].Final {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no final profile of process %d after it exited; log:\n%s", late.pid(), log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	done <- nil
	checkDetached(t)
	tree.checkRunning(t)

	st := a.Stats()
	if st.Upstream == 0 || st.NotGo == 0 || st.Targets != 0 {
		t.Errorf("stats %+v: want upstream and other processes counted, no target left", st)
	}
	for name, pid := range map[string]int{"without the ABI": noABI.pid(), "not Go": other.Process.Pid} {
		if ps := sink.of(pid); len(ps) > 0 {
			t.Errorf("process %s (%d) has %d profiles", name, pid, len(ps))
		}
	}

	ps := sink.of(tree.pid())
	if len(ps) < 2 || !ps[len(ps)-1].Final {
		t.Fatalf("%d profiles of the tree program; want one an interval and a final one; log:\n%s", len(ps), log.String())
	}
	info := ps[0].Process
	if info.ServiceName != "tree-service" || info.ExePath != treeExe || info.ExeName != filepath.Base(treeExe) ||
		!info.Lineage || !strings.HasPrefix(info.GoVersion, "go1.") || info.GoBuildID == "" {
		t.Errorf("process %+v", info)
	}
	// The interval with the most samples, checked as golineage profile's.
	best := ps[0]
	for _, p := range ps {
		if len(p.Profile.Sample) > len(best.Profile.Sample) {
			best = p
		}
	}
	path := filepath.Join(t.TempDir(), "tree.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := best.Profile.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	checkProfileLineage(t, path, nodes, leaves)
	if got := best.Profile.SampleType[1].Type; got != "cpu" {
		t.Errorf("sample type %q, want cpu", got)
	}

	lps := sink.of(late.pid())
	if lps[0].Process.ServiceName != "busy-0" {
		t.Errorf("service of the late program %q, want its executable's name busy-0", lps[0].Process.ServiceName)
	}
	if lat := sink.first[late.pid()].Sub(lateStart); lat > 2*time.Second+time.Second {
		t.Errorf("first profile of the late program %v after it started; want within the 2s pickup and one interval", lat)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("process %d (busy-0) exited", late.pid())) {
		t.Errorf("log does not say the late program exited:\n%s", log.String())
	}
}

// TestAgentDir runs golineage agent -o DIR for a few intervals: each
// fork-built process gets pprof files named by service and PID, and bad
// flags get usage errors.
func TestAgentDir(t *testing.T) {
	requireEBPF(t)
	exe := fixture(t, "busy")
	requireABI(t, exe)
	p := start(t, exe, "OTEL_SERVICE_NAME=svc/with slash")
	dir := t.TempDir()
	_, stderr, code := tool(t, "agent", "-o", dir, "-interval", "500ms", "-duration", "1800ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkDetached(t)
	matches, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("svc_with slash.%d.*.pb.gz", p.pid())))
	if len(matches) < 2 {
		ents, _ := os.ReadDir(dir)
		t.Fatalf("%d profiles of process %d (want one an interval); dir holds %v; stderr:\n%s", len(matches), p.pid(), ents, stderr)
	}
	for _, m := range matches {
		if prof := readProfile(t, m); len(prof.Sample) == 0 {
			t.Errorf("%s has no samples", m)
		}
	}
	if leftover, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftover) > 0 {
		t.Errorf("temporary files left: %v", leftover)
	}
	for _, args := range [][]string{
		{"agent"},
		{"agent", "-o", dir, "-hz", "0"},
		{"agent", "-o", dir, "-interval", "1ms"},
		{"agent", "-o", dir, "123"},
	} {
		if _, stderr, code := tool(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage); stderr %q", args, code, stderr)
		}
	}
	if _, stderr, code := tool(t, "agent", "-o", filepath.Join(dir, "missing")); code != 1 || !strings.Contains(stderr, "cannot write profiles") {
		t.Errorf("-o of a missing directory: exit %d, stderr %q", code, stderr)
	}
}

// TestAgentOTLP runs golineage agent -otlp against an OTLP server: the
// fork-built program's resource carries its service name and the
// semantic conventions' attributes, and its leaf goroutines' samples
// continue through every creator's go statement to main ("created by"
// frames, as in the pprof output), labelled with thread and goroutine.
func TestAgentOTLP(t *testing.T) {
	requireEBPF(t)
	exe := fixture(t, "tree")
	requireABI(t, exe)
	p := start(t, exe, "OTEL_SERVICE_NAME=tree-otlp")
	nodes, leaves := parseTree(t, p.report)
	rec, err := otlpout.NewRecorder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	_, stderr, code := tool(t, "agent", "-otlp", rec.Addr, "-otlp-insecure", "-hz", "199", "-interval", "500ms", "-duration", "3s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkDetached(t)
	if !strings.Contains(stderr, "dropped 0") {
		t.Errorf("stderr does not report 0 dropped:\n%s", stderr)
	}
	procs, err := rec.Processes()
	if err != nil {
		t.Fatal(err)
	}
	rs := procs[int64(p.pid())]
	if len(rs) < 2 {
		t.Fatalf("%d batches hold process %d; want one an interval; stderr:\n%s", len(rs), p.pid(), stderr)
	}
	host, _ := os.Hostname()
	res := rs[0].Resource
	if res["service.name"] != "tree-otlp" || res["process.executable.path"] != exe || res["process.executable.name"] != filepath.Base(exe) ||
		res["process.runtime.name"] != "go" || res["host.name"] != host {
		t.Errorf("resource %v", res)
	}
	checked := 0
	for _, r := range rs {
		for _, s := range r.Samples {
			goid, _ := s.Attrs[otlpout.AttrGoroutineID].(int64)
			if !leaves[fmt.Sprint(goid)] {
				continue
			}
			if _, ok := s.Attrs[otlpout.AttrThreadID].(int64); !ok {
				t.Errorf("sample of goroutine %d has no thread.id: %v", goid, s.Attrs)
			}
			var got, want []string
			for _, f := range s.Funcs {
				if strings.HasPrefix(f, "created by ") {
					got = append(got, f)
				}
			}
			for _, w := range expected(nodes, fmt.Sprint(goid)) {
				want = append(want, w[:strings.Index(w, " at ")])
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("sample of goroutine %d: lineage frames\n%s\nwant\n%s", goid, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if last := s.Funcs[len(s.Funcs)-1]; last != "created by main.main" {
				t.Errorf("sample of goroutine %d ends in %s, want main's go statement", goid, last)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Errorf("no sample of a leaf goroutine")
	}
}

// TestAgentUpstream: with Config.Upstream, a Go program built without the
// lineage ABI is profiled too, with native stacks and no lineage.
func TestAgentUpstream(t *testing.T) {
	requireEBPF(t)
	p := start(t, withoutABI(t, fixture(t, "busy")))
	sink := &memSink{}
	a, err := agent.New(agent.Config{Hz: 199, Interval: 500 * time.Millisecond, Upstream: true}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	checkDetached(t)
	ps := sink.of(p.pid())
	if len(ps) == 0 {
		t.Fatalf("no profile of the program without the ABI")
	}
	if ps[0].Process.Lineage {
		t.Errorf("process %+v says it has lineage", ps[0].Process)
	}
	work := 0
	for _, pr := range ps {
		for _, s := range pr.Profile.Sample {
			if len(s.NumLabel["goroutine"]) > 0 {
				t.Fatalf("a sample of a program without the ABI has a goroutine: %v", s.NumLabel)
			}
			for _, l := range s.Location {
				for _, ln := range l.Line {
					if ln.Function.Name == "main.work" {
						work++
					}
					if strings.HasPrefix(ln.Function.Name, "created by ") {
						t.Fatalf("a sample of a program without the ABI has lineage frames")
					}
				}
			}
		}
	}
	if work == 0 {
		t.Errorf("no sample in main.work, where the program spends its time")
	}
}

// TestAgentNoPtrace: the agent never traces a process. Run under strace,
// it makes no ptrace call while it profiles a fork-built program, and the
// program never has a tracer.
func TestAgentNoPtrace(t *testing.T) {
	requireEBPF(t)
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("strace: %v (.ci/tools installs it)", err)
		}
		t.Skipf("skipping: %v", err)
	}
	exe := fixture(t, "tree")
	requireABI(t, exe)
	p := start(t, exe)
	trace := filepath.Join(t.TempDir(), "strace")
	cmd := exec.Command("strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=ptrace", "-e", "signal=none", "-o", trace,
		toolBinary(t), "agent", "-o", t.TempDir(), "-hz", "199", "-interval", "500ms", "-duration", "3s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	profiled := regexp.MustCompile(fmt.Sprintf(`profiling process %d \(`, p.pid()))
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("agent under strace: %v\n%s", err, stderr.String())
			}
			running = false
		case <-time.After(50 * time.Millisecond):
			p.checkRunning(t) // fails on a tracer or a stop
		}
	}
	if !profiled.MatchString(stderr.String()) {
		t.Fatalf("the agent did not profile process %d:\n%s", p.pid(), stderr.String())
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	// strace may also print a thread it detached from in a system call
	// ("???( <detached ...>"): only ptrace calls count.
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "ptrace(") {
			calls = append(calls, l)
		}
	}
	if len(calls) > 0 {
		t.Errorf("the agent called ptrace:\n%s", strings.Join(calls, "\n"))
	}
}

// TestAgentMetrics: -metrics serves the agent's counts while it runs, on
// a loopback address only.
func TestAgentMetrics(t *testing.T) {
	requireEBPF(t)
	exe := fixture(t, "busy")
	requireABI(t, exe)
	start(t, exe)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	done := make(chan int)
	go func() {
		_, _, code := tool(t, "agent", "-o", t.TempDir(), "-metrics", addr, "-hz", "199", "-duration", "3s")
		done <- code
	}()
	re := regexp.MustCompile(`(?m)^golineage_agent_samples_total ([1-9]\d*)$`)
	var body string
	for deadline := time.Now().Add(10 * time.Second); !re.MatchString(body); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no samples counted at http://%s/metrics:\n%s", addr, body)
		}
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
	}
	for _, want := range []string{"# TYPE golineage_agent_targets gauge\n", "golineage_agent_processes_skipped_total{kind=\"not_go\"} ", "golineage_agent_cpu_seconds_total ", "golineage_agent_parked_reads_total "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if code := <-done; code != 0 {
		t.Errorf("agent exit %d", code)
	}
	if _, stderr, code := tool(t, "agent", "-o", t.TempDir(), "-metrics", "0.0.0.0:9999"); code != 2 || !strings.Contains(stderr, "not a loopback address") {
		t.Errorf("-metrics on all interfaces: exit %d, stderr %q", code, stderr)
	}
}

// TestAgentLabelsOffCPU: the agent's on-CPU samples carry the sampled
// goroutine's pprof labels, and its off-CPU profile has the parked
// goroutines, read with no stop, with their labels, wait reasons and
// lineage, each standing for the time it was seen parked.
func TestAgentLabelsOffCPU(t *testing.T) {
	requireEBPF(t)
	exe := fixture(t, "offcpu")
	requireABI(t, exe)
	p := start(t, exe)
	sink := &memSink{}
	var log syncBuffer
	a, err := agent.New(agent.Config{Hz: 199, Interval: time.Second, Parked: 100 * time.Millisecond, Log: &log}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ran := time.Since(began)
	checkDetached(t)
	if st := a.Stats(); st.ParkedFailed != 0 || st.NoLabels != 0 {
		t.Errorf("stats %+v; log:\n%s", st, log.String())
	}

	funcs := func(s *profile.Sample) []string {
		var out []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				out = append(out, ln.Function.Name)
			}
		}
		return out
	}
	var compute, labeled int64
	var offCPU int
	var parkedNanos time.Duration
	pools := map[string]bool{}
	for _, prof := range sink.of(p.pid()) {
		pp := prof.Profile
		if !prof.OffCPU {
			for _, s := range pp.Sample {
				if !slices.Contains(funcs(s), "main.compute") {
					continue
				}
				compute += s.Value[0]
				if w := s.Label["worker"]; len(w) == 1 && (w[0] == "0" || w[0] == "1") && len(s.Label["pool"]) == 0 {
					labeled += s.Value[0]
				}
			}
			continue
		}
		offCPU++
		if pp.DefaultSampleType != "off_cpu" || pp.SampleType[1].Type != "off_cpu" || pp.SampleType[1].Unit != "nanoseconds" {
			t.Errorf("off-CPU profile's types %v %v, default %q", pp.SampleType[0], pp.SampleType[1], pp.DefaultSampleType)
		}
		for _, s := range pp.Sample {
			fs := funcs(s)
			switch {
			case slices.Contains(fs, "main.waitLabeled"):
				pool := s.Label["pool"]
				if len(pool) != 1 || s.Label["state"][0] != "chan receive" ||
					!slices.Contains(fs, "created by main.pool") || fs[len(fs)-1] != "created by main.main" {
					t.Errorf("parked labeled sample: functions %v, labels %v", fs, s.Label)
					continue
				}
				pools[pool[0]] = true
				if pool[0] == "0" {
					parkedNanos += time.Duration(s.Value[1])
				}
			case slices.Contains(fs, "main.waitPlain"):
				if len(s.Label["pool"]) != 0 || !slices.Contains(fs, "created by main.pool") {
					t.Errorf("parked plain sample: functions %v, labels %v", fs, s.Label)
				}
			}
		}
	}
	t.Logf("%d on-CPU samples in main.compute (%d labeled), pool 0 parked %v of %v; stats %+v", compute, labeled, parkedNanos, ran, a.Stats())
	if compute < 100 || labeled < compute*9/10 {
		t.Errorf("%d on-CPU samples in main.compute, %d of them with their worker label; want most of at least 100", compute, labeled)
	}
	if offCPU == 0 || len(pools) != 3 {
		t.Fatalf("%d off-CPU profiles, parked pools %v; log:\n%s", offCPU, pools, log.String())
	}
	// pool 0's goroutine was parked all along: its samples cover the time
	// from the first read to the last, never more than the run.
	if parkedNanos < ran/2 || parkedNanos > ran {
		t.Errorf("pool 0's goroutine parked for %v of a %v run", parkedNanos, ran)
	}
}
