package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"fpsafe.dev/misc/golineage/internal/ebpf"
	"fpsafe.dev/misc/golineage/internal/otlpout"
)

// The test builds this Collector, golineage and the fixtures with the go
// command on PATH (the fork's, under all.bash), and an upstream-built
// program with the pristine release VERSION names.

// build builds the package in dir into out with goBin.
func build(t *testing.T, goBin, dir, out string) string {
	t.Helper()
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, b)
	}
	return out
}

// upstreamGo returns the go command of the upstream release the fork is
// based on (VERSION's first line, up to its "-"), as the go command's
// toolchain switch fetches it.
func upstreamGo(t *testing.T) string {
	v, err := os.ReadFile("../../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	release, _, _ := strings.Cut(strings.SplitN(string(v), "\n", 2)[0], "-")
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+release)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOTOOLCHAIN=%s go env GOROOT: %v", release, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "bin", "go")
}

// requireEBPF skips where the kernel or privileges do not allow the agent,
// except under CI=true, where they must.
func requireEBPF(t *testing.T) {
	t.Helper()
	if err := ebpf.CheckPrivileges(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the agent must run under CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: unshare --pid needs root")
	}
}

// proc is a started process whose standard error is collected, line by
// line, with the time each came.
type proc struct {
	cmd   *exec.Cmd
	state *os.ProcessState // once done
	mu    sync.Mutex
	lines []line
	done  chan struct{}
}

type line struct {
	at   time.Time
	text string
}

func startProc(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = p.cmd.Stderr
	// Fixtures such as tree run until their standard input closes.
	if _, err := p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, line{time.Now(), sc.Text()})
			p.mu.Unlock()
		}
	}()
	go func() {
		// The output is read up to the exit, or a little after: a
		// descendant that outlives the process may hold the pipe.
		p.state, _ = p.cmd.Process.Wait()
		select {
		case <-scanned:
		case <-time.After(time.Second):
		}
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill kills the process and waits for it.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// success reports whether the process exited with status 0 (after done).
func (p *proc) success() bool { return p.state != nil && p.state.Success() }

// log returns what the process wrote.
func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// waitLine waits for a line containing s and returns when it came.
func (p *proc) waitLine(t *testing.T, s string, d time.Duration) time.Time {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		p.mu.Lock()
		for _, l := range p.lines {
			if strings.Contains(l.text, s) {
				p.mu.Unlock()
				return l.at
			}
		}
		p.mu.Unlock()
	}
	t.Fatalf("no line %q within %v; output:\n%s", s, d, p.log())
	return time.Time{}
}

// collector starts the Collector with config and waits until it
// listens on addr (if any).
func collector(t *testing.T, bin, config, addr string) *proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, nil, bin, "--config", path, "--feature-gates=service.profilesSupport")
	p.waitLine(t, "Everything is ready", 30*time.Second)
	if addr != "" {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Collector does not listen on %s", addr)
			}
		}
	}
	return p
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// child returns the only child of process pid (unshare's forked program).
func child(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if f := strings.Fields(string(b)); len(f) == 1 {
			c, _ := strconv.Atoi(f[0])
			// Wait for the exec: the child is unshare until then.
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c)); !strings.HasSuffix(exe, "/unshare") {
				return c
			}
		}
	}
	t.Fatalf("process %d has no child", pid)
	return 0
}

// rssMB is process pid's resident memory, in MB.
func rssMB(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}

// ourBPF lists the agent's BPF programs still loaded, by bpftool.
func ourBPF(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("bpftool", "-j", "prog", "show").Output()
	if err != nil {
		t.Fatalf("bpftool prog show: %v", err)
	}
	var progs []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(out, &progs); err != nil {
		t.Fatalf("bpftool's output: %v", err)
	}
	var ours []string
	for _, p := range progs {
		switch p.Name {
		case "sample", "proc_exec", "proc_exit":
			ours = append(ours, fmt.Sprintf("%s (id %d)", p.Name, p.ID))
		}
	}
	return ours
}

// waitProfiles waits until rec holds a resource of each pid with samples,
// and returns them.
func waitProfiles(t *testing.T, rec *otlpout.Recorder, d time.Duration, pids ...int) map[int64][]otlpout.ReadProcess {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		got, err := rec.Processes()
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for _, pid := range pids {
			n := 0
			for _, p := range got[int64(pid)] {
				n += len(p.Samples)
			}
			all = all && n > 0
		}
		if all {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v, not every process of %v has samples (%d batches)", d, pids, rec.Batches())
		}
	}
}

// checkLineage checks that some sample of the resources runs through at
// least depth "created by" frames, the last one main's go statement.
func checkLineage(t *testing.T, who string, rs []otlpout.ReadProcess, depth int) {
	t.Helper()
	for _, r := range rs {
		for _, s := range r.Samples {
			n := 0
			for _, f := range s.Funcs {
				if strings.HasPrefix(f, "created by ") {
					n++
				}
			}
			if n >= depth && s.Funcs[len(s.Funcs)-1] == "created by main.main" {
				return
			}
		}
	}
	t.Errorf("%s: no sample continues through %d go statements to main's", who, depth)
}

// waitLabels waits up to d for the profiles of testdata/offcpu, process
// pid, to reach rec, and checks them: its computing goroutines' on-CPU
// samples carry their pprof label as an attribute, and its off-CPU profile
// (sent apart from the on-CPU one) has the parked goroutines with their
// labels, wait reason and lineage.
func waitLabels(t *testing.T, who string, rec *otlpout.Recorder, pid int, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		got, err := rec.Processes()
		if err != nil {
			t.Fatal(err)
		}
		onCPU, offCPU := checkLabels(t, who, got[int64(pid)])
		if onCPU && offCPU {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: within %v, labeled on-CPU samples: %v; parked labeled goroutines in the off-CPU profile: %v", who, d, onCPU, offCPU)
			return
		}
	}
}

// checkLabels reports whether rs has the samples waitLabels wants, and
// fails on a wrong one.
func checkLabels(t *testing.T, who string, rs []otlpout.ReadProcess) (onCPU, offCPU bool) {
	t.Helper()
	for _, r := range rs {
		for _, s := range r.Samples {
			switch {
			case s.Type == "samples" && slices.Contains(s.Funcs, "main.compute"):
				if w, _ := s.Attrs["worker"].(string); w != "0" && w != "1" {
					t.Errorf("%s: on-CPU sample of main.compute with attributes %v, want its worker label", who, s.Attrs)
				} else {
					onCPU = true
				}
			case s.Type == "off_cpu" && slices.Contains(s.Funcs, "main.waitLabeled"):
				if p, _ := s.Attrs["pool"].(string); p == "" || s.Attrs["state"] != "chan receive" ||
					!slices.Contains(s.Funcs, "created by main.pool") || s.Value <= 0 {
					t.Errorf("%s: off-CPU sample %v, attributes %v, value %d", who, s.Funcs, s.Attrs, s.Value)
				} else {
					offCPU = true
				}
			}
		}
	}
	return onCPU, offCPU
}

// pipeline is a Collector configuration whose profiles pipeline takes
// receiver's profiles (configured by receiverConfig) to backend, an OTLP
// endpoint over gRPC.
func pipeline(receiver, receiverConfig, backend string) string {
	return fmt.Sprintf(`
receivers:
  %s:
%s
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [%[1]s]
      exporters: [otlp_grpc]
`, receiver, receiverConfig, backend)
}

// TestCollector runs a Collector built from the Collector's modules, fed
// by golineage agent -otlp and then by its own golineage receiver, with
// three fork-built programs (one in its own PID namespace), an
// upstream-built one and a non-Go process, and checks what reached the
// backend (an OTLP endpoint behind the Collector's OTLP exporter).
func TestCollector(t *testing.T) {
	requireEBPF(t)
	if _, err := exec.LookPath("bpftool"); err != nil {
		t.Fatalf("bpftool: %v (.ci/tools installs it)", err)
	}
	tmp := t.TempDir()
	colBin := build(t, "go", ".", filepath.Join(tmp, "otelcol-golineage"))
	agentBin := build(t, "go", "..", filepath.Join(tmp, "golineage"))
	tree := build(t, "go", "../testdata/tree", filepath.Join(tmp, "tree"))
	busy := build(t, "go", "../testdata/busy", filepath.Join(tmp, "busy"))
	offcpu := build(t, "go", "../testdata/offcpu", filepath.Join(tmp, "offcpu"))
	upstream := build(t, upstreamGo(t), "../testdata/busy", filepath.Join(tmp, "busy-upstream"))

	backend, err := otlpout.NewRecorder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	addr := freeAddr(t)
	config := pipeline("otlp", "    protocols:\n      grpc:\n        endpoint: "+addr, backend.Addr)
	col := collector(t, colBin, config, addr)

	treeP := startProc(t, []string{"OTEL_SERVICE_NAME=tree"}, tree)
	nsP := startProc(t, []string{"OTEL_SERVICE_NAME=busy-ns"}, "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", busy)
	nsPID := child(t, nsP.pid())
	labelsP := startProc(t, []string{"OTEL_SERVICE_NAME=labels"}, offcpu)
	upP := startProc(t, []string{"OTEL_SERVICE_NAME=upstream"}, upstream)
	other := startProc(t, nil, "sleep", "600")

	agent := startProc(t, nil, agentBin, "agent", "-otlp", addr, "-otlp-insecure", "-hz", "99", "-interval", "1s", "-parked", "1s")
	agentStart := time.Now()
	agent.waitLine(t, fmt.Sprintf("profiling process %d (tree,", treeP.pid()), 10*time.Second)
	got := waitProfiles(t, backend, 30*time.Second, treeP.pid(), nsPID, labelsP.pid())
	t.Logf("profiles of the fork-built programs at the backend %v after the agent started", time.Since(agentStart).Round(time.Millisecond))

	// One resource per process, named by its service, with the semantic
	// conventions' attributes; the one in its own namespace by its host PID.
	host, _ := os.Hostname()
	for pid, want := range map[int]map[string]any{
		treeP.pid(): {"service.name": "tree", "process.executable.path": tree, "process.executable.name": "tree", "process.runtime.name": "go", "host.name": host},
		nsPID:       {"service.name": "busy-ns", "process.executable.path": busy, "process.executable.name": "busy", "process.runtime.name": "go", "host.name": host},
	} {
		res := got[int64(pid)][0].Resource
		for k, v := range want {
			if res[k] != v {
				t.Errorf("process %d: resource %s = %v, want %v (all: %v)", pid, k, res[k], v, res)
			}
		}
		if v, _ := res["process.runtime.version"].(string); !strings.Contains(v, "fpsafe") {
			t.Errorf("process %d: process.runtime.version %q, want the fork's", pid, v)
		}
	}
	checkLineage(t, "tree", got[int64(treeP.pid())], 4)
	checkLineage(t, "busy in its PID namespace", got[int64(nsPID)], 1)
	waitLabels(t, "labels", backend, labelsP.pid(), 10*time.Second)

	// A program started now is picked up within 2 s, and its exit ends its
	// profiles.
	late := startProc(t, []string{"OTEL_SERVICE_NAME=late"}, busy)
	lateStart := time.Now()
	if at := agent.waitLine(t, fmt.Sprintf("profiling process %d (late,", late.pid()), 5*time.Second); at.Sub(lateStart) > 2*time.Second {
		t.Errorf("the program started after the agent was picked up after %v, want within 2s", at.Sub(lateStart))
	}
	waitProfiles(t, backend, 10*time.Second, late.pid())
	late.kill()
	agent.waitLine(t, fmt.Sprintf("process %d (late) exited", late.pid()), 5*time.Second)

	// The upstream-built program and the non-Go process are skipped and
	// counted, never profiled.
	for name, pid := range map[string]int{"upstream-built": upP.pid(), "non-Go": other.pid()} {
		if rs := got[int64(pid)]; len(rs) > 0 {
			t.Errorf("the %s process %d has profiles", name, pid)
		}
	}
	if !regexp.MustCompile(`skipped [1-9]\d* upstream Go and [1-9]\d* other processes`).MatchString(agent.log()) {
		t.Errorf("the agent's log does not count skipped upstream and other processes:\n%s", agent.log())
	}

	// The Collector killed and restarted: the agent survives within its
	// memory bound, and its profiles reach the backend again.
	col.cmd.Process.Signal(syscall.SIGKILL)
	<-col.done
	down := time.Now()
	maxRSS := 0.0
	for time.Since(down) < 4*time.Second {
		maxRSS = max(maxRSS, rssMB(t, agent.pid()))
		time.Sleep(200 * time.Millisecond)
	}
	if maxRSS > 100 {
		t.Errorf("the agent's RSS reached %.0f MB while the Collector was down; want at most 100", maxRSS)
	}
	before := backend.Batches()
	col = collector(t, colBin, config, addr)
	for deadline := time.Now().Add(30 * time.Second); backend.Batches() <= before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no profiles reached the backend within 30s of the Collector's restart; agent log:\n%s", agent.log())
		}
	}
	t.Logf("agent RSS at most %.1f MB while the Collector was down; profiles resumed after the restart", maxRSS)

	// SIGKILL leaves nothing attached: the kernel frees the programs,
	// links and perf events with the agent's descriptors.
	if len(ourBPF(t)) == 0 {
		t.Errorf("bpftool lists none of the agent's programs while it runs")
	}
	agent.cmd.Process.Signal(syscall.SIGKILL)
	<-agent.done
	for deadline := time.Now().Add(5 * time.Second); len(ourBPF(t)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after SIGKILL, bpftool still lists %v", ourBPF(t))
		}
	}
	col.kill()

	// The same as the Collector's own receiver: the profiles reach the
	// backend, and SIGTERM shuts it down cleanly, detached.
	backend2, err := otlpout.NewRecorder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend2.Close()
	col = collector(t, colBin, pipeline("golineage", "    hz: 99\n    interval: 1s\n    parked: 1s", backend2.Addr), "")
	got = waitProfiles(t, backend2, 30*time.Second, treeP.pid(), nsPID)
	if res := got[int64(treeP.pid())][0].Resource; res["service.name"] != "tree" {
		t.Errorf("through the receiver: resource %v", res)
	}
	checkLineage(t, "tree, through the receiver", got[int64(treeP.pid())], 4)
	waitLabels(t, "labels, through the receiver", backend2, labelsP.pid(), 10*time.Second)
	col.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	select {
	case <-col.done:
	case <-ctx.Done():
		t.Fatalf("the Collector did not stop within 15s of SIGTERM; log:\n%s", col.log())
	}
	if !col.success() {
		t.Errorf("the Collector exited with %v after SIGTERM; log:\n%s", col.state, col.log())
	}
	if left := ourBPF(t); len(left) > 0 {
		t.Errorf("after the Collector's shutdown, bpftool lists %v", left)
	}
}
