package main

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
)

// The fixtures are built with the go command on PATH (the toolchain running
// the tests) unless GOLINEAGE_FIXTURE_GO names another one, e.g. a work tree
// whose runtime publishes the lineage ABI before it lands in goroot.
func fixtureGo() string {
	if g := os.Getenv("GOLINEAGE_FIXTURE_GO"); g != "" {
		return g
	}
	return "go"
}

var (
	tmpDir string
	builds sync.Map // key -> *buildResult
)

type buildResult struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "golineage-test")
	if err != nil {
		panic(err)
	}
	tmpDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

var toolBuild buildResult

// toolBinary builds golineage itself, for the tests that need a separate
// process: the gdb extension runs it, and signals and credentials are per
// process. Every other test calls cli in process.
func toolBinary(t testing.TB) string {
	t.Helper()
	toolBuild.once.Do(func() {
		toolBuild.path = filepath.Join(tmpDir, "golineage")
		if out, err := exec.Command("go", "build", "-o", toolBuild.path, ".").CombinedOutput(); err != nil {
			toolBuild.err = fmt.Errorf("building golineage: %v\n%s", err, out)
		}
	})
	if toolBuild.err != nil {
		t.Fatal(toolBuild.err)
	}
	return toolBuild.path
}

// fixture builds testdata/NAME once per flag set.
func fixture(t testing.TB, name string, flags ...string) string {
	t.Helper()
	key := name + " " + strings.Join(flags, " ")
	v, _ := builds.LoadOrStore(key, &buildResult{})
	br := v.(*buildResult)
	br.once.Do(func() {
		br.path = filepath.Join(tmpDir, fmt.Sprintf("%s-%d", name, len(flags)))
		if len(flags) > 0 {
			br.path += "-" + regexp.MustCompile(`[^a-z]+`).ReplaceAllString(strings.Join(flags, ""), "")
		}
		args := append([]string{"build", "-o", br.path}, flags...)
		cmd := exec.Command(fixtureGo(), append(args, "./testdata/"+name)...)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			br.err = fmt.Errorf("building %s: %v\n%s", name, err, out)
		}
	})
	if br.err != nil {
		t.Fatal(br.err)
	}
	return br.path
}

// requireABI skips unless exe publishes the lineage ABI (detected, not
// assumed from the toolchain's name).
func requireABI(t *testing.T, exe string) {
	t.Helper()
	b, err := gobin.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := lineageabi.Find(b.ELF); err != nil {
		t.Skipf("skipping: the fixture's runtime has no lineage ABI (%v); set GOLINEAGE_FIXTURE_GO to a toolchain that has it", err)
	}
}

// proc is a running fixture that printed its report up to "ready".
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	report  []string
	dir     string
	stderr  bytes.Buffer
	started time.Time
}

func start(t *testing.T, exe string, env ...string) *proc {
	t.Helper()
	p := &proc{dir: t.TempDir(), started: time.Now()}
	p.cmd = exec.Command(exe)
	p.cmd.Dir = p.dir
	p.cmd.Env = append(os.Environ(), env...)
	p.stdin, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s exited before ready; output:\n%s\nstderr:\n%s", exe, strings.Join(p.report, "\n"), p.stderr.String())
			}
			if l == "ready" {
				go func() {
					for range lines {
					}
				}()
				return p
			}
			p.report = append(p.report, l)
		case <-timeout:
			t.Fatalf("%s: no ready line within 60s", exe)
		}
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.stdin.Close()
	done := make(chan bool)
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// alive checks the process is running (not stopped, not dead) after a tool
// has been at it.
func (p *proc) checkRunning(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		t.Fatalf("target died: %v", err)
	}
	s := string(b)
	state := s[strings.LastIndexByte(s, ')')+2]
	if state == 'T' || state == 't' || state == 'Z' || state == 'X' {
		t.Fatalf("target left in state %c", state)
	}
	for _, tid := range mustTasks(t, p.pid()) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", p.pid(), tid))
		if m := regexp.MustCompile(`TracerPid:\s+(\d+)`).FindSubmatch(b); m != nil && string(m[1]) != "0" {
			t.Fatalf("thread %s still traced by %s", tid, m[1])
		}
	}
}

func mustTasks(t *testing.T, pid int) []string {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// tool runs golineage in process and returns stdout, stderr and the exit
// status.
func tool(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() { done <- cli(args, &stdout, &stderr) }()
	select {
	case code := <-done:
		return stdout.String(), stderr.String(), code
	case <-time.After(120 * time.Second):
		t.Fatalf("golineage %v hung", args)
	}
	panic("unreachable")
}

// threadBlock is one thread of golineage's output.
type threadBlock struct {
	head    string
	frames  []string // "func file:line [+off]"
	lineage []string // "created by ..." lines
}

func parseThreads(out string) []threadBlock {
	var bs []threadBlock
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "thread "):
			bs = append(bs, threadBlock{head: l})
		case len(bs) == 0:
		case strings.HasPrefix(l, "created by "):
			b := &bs[len(bs)-1]
			b.lineage = append(b.lineage, l)
		case strings.HasSuffix(l, "(...)") && !strings.HasPrefix(l, "\t") && i+1 < len(lines):
			b := &bs[len(bs)-1]
			if len(b.lineage) == 0 {
				b.frames = append(b.frames, strings.TrimSuffix(l, "(...)")+" "+strings.TrimSpace(lines[i+1]))
			}
			i++
		}
	}
	return bs
}

// goroutineTraces parses runtime.Stack(all) output into frame lists.
func goroutineTraces(report []string) map[string][]string {
	out := map[string][]string{}
	var cur string
	argsRe := regexp.MustCompile(`\(.*\)$`)
	for i := 0; i < len(report); i++ {
		l := report[i]
		if strings.HasPrefix(l, "goroutine ") {
			cur = l
			continue
		}
		if cur == "" || l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by") {
			if strings.HasPrefix(l, "created by") {
				i++
			}
			continue
		}
		if i+1 < len(report) {
			out[cur] = append(out[cur], argsRe.ReplaceAllString(l, "")+" "+strings.TrimSpace(report[i+1]))
			i++
		}
	}
	return out
}

func containsRun(hay, needle []string) bool {
	for i := 0; i+len(needle) <= len(hay); i++ {
		if strings.Join(hay[i:i+len(needle)], "\n") == strings.Join(needle, "\n") {
			return true
		}
	}
	return false
}

// TestNativeStacksMatchRuntime: for every goroutine blocked in a system call,
// the runtime's own traceback (gentraceback, minus its innermost frame, which
// it takes from the syscall entry) appears frame for frame, with file, line
// and offset, in the stack golineage unwinds by frame pointers from the
// thread's registers.
func TestNativeStacksMatchRuntime(t *testing.T) {
	for _, flags := range [][]string{nil, {"-ldflags=-s -w"}, {"-buildmode=pie", "-ldflags=-s -w"}} {
		t.Run(strings.Join(append([]string{"build"}, flags...), " "), func(t *testing.T) {
			p := start(t, fixture(t, "blocked", flags...))
			out, stderr, code := tool(t, "stacks", "-native", fmt.Sprint(p.pid()))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			p.checkRunning(t)
			threads := parseThreads(out)
			n := 0
			for g, frames := range goroutineTraces(p.report) {
				if !strings.Contains(g, "[syscall") || !strings.Contains(strings.Join(frames, "\n"), "main.block") {
					continue
				}
				n++
				want := append(frames[1:], "main.main.gowrap1")
				want = want[:len(want)-1]
				found := false
				for _, th := range threads {
					if containsRun(th.frames, want) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: runtime's traceback\n%s\nnot found in golineage output:\n%s", g, strings.Join(want, "\n"), out)
				}
			}
			if n != 3 {
				t.Fatalf("found %d blocked goroutines in the fixture's report, want 3:\n%s", n, strings.Join(p.report, "\n"))
			}
		})
	}
}

// kernelCore crashes a fresh fixture with SIGQUIT (GOTRACEBACK=crash) and
// returns its core file, or skips if kernel cores do not land in the cwd.
func kernelCore(t *testing.T, exe string, env ...string) (string, *proc) {
	t.Helper()
	pat, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	if strings.HasPrefix(string(pat), "|") || strings.Contains(string(pat), "/") {
		t.Skipf("skipping: kernel core files go to %q, not to the process's directory", strings.TrimSpace(string(pat)))
	}
	p := start(t, exe, append(env, "GOTRACEBACK=crash")...)
	lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(p.pid(), unix.RLIMIT_CORE, &lim, nil); err != nil {
		t.Skipf("skipping: cannot raise the fixture's RLIMIT_CORE: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGQUIT)
	p.cmd.Wait()
	ents, _ := filepath.Glob(filepath.Join(p.dir, "core*"))
	if len(ents) == 0 {
		t.Skipf("skipping: no core file was written (core_pattern %q)", strings.TrimSpace(string(pat)))
	}
	return ents[0], p
}

// TestCoreStrippedSame reads one kernel core with the unstripped executable
// and with its stripped twin: the outputs must be identical, and must show
// the fixture's blocked goroutines.
func TestCoreStrippedSame(t *testing.T) {
	exe := fixture(t, "blocked")
	stripped := filepath.Join(t.TempDir(), "blocked-stripped")
	if out, err := exec.Command("strip", "-o", stripped, exe).CombinedOutput(); err != nil {
		t.Skipf("skipping: strip(1) unavailable: %v %s", err, out)
	}
	core, _ := kernelCore(t, exe)
	a, stderr, code := tool(t, "stacks", "-native", "--core", core, exe)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, stderr, code := tool(t, "stacks", "-native", "--core", core, stripped)
	if code != 0 {
		t.Fatalf("stripped: exit %d: %s", code, stderr)
	}
	if a != b {
		t.Errorf("stripped executable gives different output:\n%s\n---\n%s", a, b)
	}
	if n := strings.Count(a, "main.S.run(...)"); n != 3 {
		t.Errorf("want 3 threads in main.S.run, got %d:\n%s", n, a)
	}
}

// TestErrors: each bad input gives a clear message and a non-zero exit.
func TestErrors(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, bytes.Repeat([]byte("not a core "), 1000), 0o644)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	exited := exec.Command("true")
	exited.Run()
	exe := fixture(t, "blocked")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"not a pid", []string{"stacks", "abc"}, "is not a process id"},
		{"no such pid", []string{"stacks", fmt.Sprint(exited.Process.Pid)}, "no such process"},
		{"not go", []string{"stacks", fmt.Sprint(sleeper.Process.Pid)}, "is not a Go program"},
		{"core junk", []string{"stacks", "-native", "--core", junk, exe}, "not an ELF core file"},
		{"core is exe", []string{"stacks", "-native", "--core", exe, exe}, "not a core file"},
		{"exe not go", []string{"stacks", "--core", junk, "/bin/sh"}, "is not a Go program"},
		{"no core", []string{"stacks", "-native", "--core", "/nonexistent", exe}, "no such file"},
		{"usage", []string{"frobnicate"}, "unknown command"},
		{"profile bad hz", []string{"profile", "-hz", "0", "1"}, "-hz 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := tool(t, c.args...)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Errorf("golineage %v: exit %d, stderr %q; want non-zero and %q", c.args, code, stderr, c.want)
			}
		})
	}
}

// TestNoABI: a Go binary without the lineage ABI is named with its toolchain.
// The ABI's absence is made by erasing the header's cookie from a copy, so
// the test does not depend on which runtime built the fixture.
func TestNoABI(t *testing.T) {
	p := start(t, withoutABI(t, fixture(t, "blocked")))
	_, stderr, code := tool(t, "stacks", fmt.Sprint(p.pid()))
	p.checkRunning(t)
	if code == 0 || !strings.Contains(stderr, "does not publish the goroutine lineage ABI") || !strings.Contains(stderr, "built by go1.") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, _, code := tool(t, "stacks", "-native", fmt.Sprint(p.pid())); code != 0 {
		t.Errorf("-native on a binary without the ABI: exit %d", code)
	}
}

// TestTruncatedCore: a core cut short is reported, with a non-zero exit.
// Cut in its headers it is refused; cut in its memory (90, 75 and 50% of
// testdata/parked's kernel core, and where its goroutines' data ends) it
// lists every goroutine whose data lies before the cut, as the whole core
// does, and ends with one line counting what was skipped (cutCore).
func TestTruncatedCore(t *testing.T) {
	exe := fixture(t, "blocked")
	core, _ := kernelCore(t, exe)
	data, err := os.ReadFile(core)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, 4096, len(data) / 3} {
		short := filepath.Join(t.TempDir(), "short")
		os.WriteFile(short, data[:n], 0o644)
		_, stderr, code := tool(t, "stacks", "-native", "--core", short, exe)
		if code == 0 || !strings.Contains(stderr, "truncated") && !strings.Contains(stderr, "not an ELF core") {
			t.Errorf("core cut to %d bytes: exit %d, stderr %q", n, code, stderr)
		}
	}
	// A core of another program read with this executable.
	other := fixture(t, "busy")
	_, stderr, code := tool(t, "stacks", "-native", "--core", core, other)
	if code == 0 {
		t.Errorf("core read with the wrong executable: exit 0, stderr %q", stderr)
	}
	t.Run("parked", func(t *testing.T) {
		exe := fixture(t, "parked")
		requireABI(t, exe)
		core, _ := kernelCore(t, exe)
		// The kernel writes memory in address order, and the runtime maps
		// the registry and the regions low (runtime/lineage_lowmem.go): a
		// core cut to 90% or to half still lists every goroutine.
		full, _, _ := psJSON(t, core, exe)
		for _, pct := range []int64{90, 50} {
			cut := copyFile(t, core)
			st, err := os.Stat(cut)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(cut, st.Size()*pct/100); err != nil {
				t.Fatal(err)
			}
			if got, stderr, _ := psJSON(t, cut, exe); len(got) != len(full) {
				t.Errorf("kernel core cut to %d%%: %d of %d goroutines listed; stderr %q", pct, len(got), len(full), stderr)
			}
		}
		cutCore(t, core, exe)
	})
}

// TestVanishingTarget: a target that exits while being sampled ends the
// profile cleanly with what was collected.
func TestVanishingTarget(t *testing.T) {
	exe := fixture(t, "busy")
	cmd := exec.Command(exe, "-d", "700ms")
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	_, stderr, code := tool(t, "profile", "-native", "-hz", "200", "-duration", "5s", "-o", out, fmt.Sprint(cmd.Process.Pid))
	cmd.Wait()
	if code != 0 || !strings.Contains(stderr, "exited") {
		t.Errorf("exit %d, stderr %q; want 0 and a note that the process exited", code, stderr)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("no profile written: %v", err)
	}
}

// TestInterrupt: SIGINT to a sampling golineage detaches from the target,
// writes what it has and exits 130; the target keeps running untraced.
func TestInterrupt(t *testing.T) {
	cmd := exec.Command(fixture(t, "busy"))
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(200 * time.Millisecond)
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	prof := exec.Command(toolBinary(t), "profile", "-native", "-hz", "500", "-duration", "60s", "-o", out, fmt.Sprint(cmd.Process.Pid))
	if err := prof.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	prof.Process.Signal(os.Interrupt)
	done := make(chan error)
	go func() { done <- prof.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("exit: %v, want status 130", err)
		}
	case <-time.After(20 * time.Second):
		prof.Process.Kill()
		t.Fatal("golineage did not stop on SIGINT")
	}
	p := &proc{cmd: cmd}
	p.checkRunning(t)
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("no profile written after SIGINT: %v", err)
	}
}

// TestProfileNative samples the busy fixture with each collector and output
// format and checks the stacks are whole: main.work is a frameless leaf, so
// its caller appears only if the innermost frame was repaired.
func TestProfileNative(t *testing.T) {
	cmd := exec.Command(fixture(t, "busy"))
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(200 * time.Millisecond)
	pid := fmt.Sprint(cmd.Process.Pid)
	for _, mode := range []string{"ptrace", "ptrace-consistent", "ebpf"} {
		t.Run(mode, func(t *testing.T) {
			collector, extra := mode, "-consistent=false"
			if mode == "ptrace-consistent" {
				collector, extra = "ptrace", "-consistent"
			}
			if collector == "ebpf" {
				requireEBPF(t)
			}
			dir := t.TempDir()
			folded, stderr, code := tool(t, "profile", "-native", extra, "-collector", collector, "-hz", "199", "-duration", "1s", "-format", "folded", pid)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			whole, broken := 0, 0
			for _, l := range strings.Split(folded, "\n") {
				switch {
				case strings.Contains(l, "main.main.gowrap1;main.worker;main.work "):
					whole++
				case strings.Contains(l, "main.main.gowrap1;main.work "):
					broken++
				}
			}
			if whole == 0 || broken > 0 {
				t.Errorf("%d whole and %d broken main.work stacks:\n%s", whole, broken, folded)
			}
			if mode != "ptrace" {
				return // the output formats do not depend on the collector
			}
			pb := filepath.Join(dir, "p.pb.gz")
			if _, stderr, code := tool(t, "profile", "-native", "-collector", collector, "-hz", "99", "-duration", "500ms", "-o", pb, pid); code != 0 {
				t.Fatalf("pprof: exit %d: %s", code, stderr)
			}
			f, _ := os.Open(pb)
			defer f.Close()
			prof, err := profile.Parse(f)
			if err != nil || len(prof.Sample) == 0 {
				t.Fatalf("profile: %v, %d samples", err, len(prof.Sample))
			}
			svg := filepath.Join(dir, "f.svg")
			if _, stderr, code := tool(t, "profile", "-native", "-collector", collector, "-hz", "99", "-duration", "300ms", "-format", "svg", "-o", svg, pid); code != 0 {
				t.Fatalf("svg: exit %d: %s", code, stderr)
			}
			data, _ := os.ReadFile(svg)
			if err := xml.Unmarshal(data, new(struct{})); err != nil || !bytes.Contains(data, []byte("main.worker")) {
				t.Errorf("bad svg (%v)", err)
			}
			p := &proc{cmd: cmd}
			p.checkRunning(t)
		})
	}
}

// TestPermission runs golineage as an unprivileged user against a process it
// may not trace: it must say what is needed.
func TestPermission(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to start a tool as another user")
	}
	dir, err := os.MkdirTemp("", "golineage-perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	tl := filepath.Join(dir, "golineage")
	data, _ := os.ReadFile(toolBinary(t))
	os.WriteFile(tl, data, 0o755)
	p := start(t, fixture(t, "blocked"))
	cmd := exec.Command(tl, "stacks", "-native", fmt.Sprint(p.pid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CAP_SYS_PTRACE") {
		t.Errorf("unprivileged run: %v, output %q; want failure naming CAP_SYS_PTRACE", err, out)
	}
	p.checkRunning(t)
	// A process already under another tracer (gdb) is named as such.
	if _, err := exec.LookPath("gdb"); err == nil {
		gdb := exec.Command("gdb", "-batch", "-nx", "-p", fmt.Sprint(p.pid()), "-ex", "shell sleep 3")
		if err := gdb.Start(); err == nil {
			defer gdb.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
				if regexp.MustCompile(`TracerPid:\s+[1-9]`).Match(b) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Every reader that uses ptrace refuses it alike, naming
			// the tracer, even one that would stop no thread (profile
			// -wall of parked goroutines). The ebpf collector never
			// attaches, so it profiles a traced process.
			for _, args := range [][]string{
				{"stacks", "-native"}, {"ps"}, {"ps", "-stop"},
				{"profile", "-collector", "ptrace", "-wall", "-duration", "200ms", "-format", "folded"},
			} {
				_, stderr, code := tool(t, append(args, fmt.Sprint(p.pid()))...)
				if code == 0 || !regexp.MustCompile(`already traced by process [1-9]\d* \(gdb\)`).MatchString(stderr) {
					t.Errorf("%v under gdb: exit %d, stderr %q", args, code, stderr)
				}
			}
		}
	}
}
