package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"fpsafe.dev/misc/golineage/internal/ebpf"
	"fpsafe.dev/misc/internal/lineageabi"
)

// requireEBPF skips a test the kernel or this process cannot run the ebpf
// collector for, except under CI=true, where the CI machine (root, a kernel
// with BTF) must run it: there a refusal fails the test.
func requireEBPF(t testing.TB) {
	t.Helper()
	err := ebpf.CheckPrivileges(os.Getenv(btfEnv))
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the ebpf collector must run under CI: %v", err)
	}
	t.Skipf("skipping: %v", err)
}

// attachedFDs lists this process's descriptors of perf events and BPF
// objects, as /proc/self/fd shows them.
func attachedFDs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && (strings.Contains(l, "perf_event") || strings.Contains(l, "bpf")) {
			out = append(out, e.Name()+" -> "+l)
		}
	}
	return out
}

// checkDetached fails if golineage left a perf event or BPF object open.
func checkDetached(t *testing.T) {
	t.Helper()
	if fds := attachedFDs(t); len(fds) > 0 {
		t.Errorf("left open after the profile: %v", fds)
	}
}

// TestEBPFLineage: the ebpf collector, the default here, samples the tree
// fixture's spinning leaf goroutines with exactly the lineage the program
// saw through runtime.Stack, and leaves nothing attached.
func TestEBPFLineage(t *testing.T) {
	_, stderr := profileTree(t, "-hz", "199", "-duration", "2s")
	if !strings.HasPrefix(stderr, "golineage: collector ebpf\n") {
		t.Errorf("stderr does not begin with the collector line:\n%s", stderr)
	}
}

// profileTree profiles the tree fixture with the ebpf collector and the
// given flags, checks the lineage of every leaf goroutine's samples and
// that nothing was left attached, and returns the profile and stderr.
func profileTree(t *testing.T, flags ...string) (pb, stderr string) {
	t.Helper()
	requireEBPF(t)
	exe := fixture(t, "tree")
	requireABI(t, exe)
	p := start(t, exe)
	nodes, leaves := parseTree(t, p.report)
	pb = filepath.Join(t.TempDir(), "p.pb.gz")
	_, stderr, code := tool(t, append(append([]string{"profile"}, flags...), "-o", pb, strconv.Itoa(p.pid()))...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p.checkRunning(t)
	checkProfileLineage(t, pb, nodes, leaves)
	checkDetached(t)
	return pb, stderr
}

// TestEBPFWallParked: on a parked population, the ebpf collector's
// wall-clock profile has the stacks (with their lineage) the ptrace
// collector's has. One difference is by design: a goroutine blocked in a
// system call is not on a CPU, so the ebpf collector walks it from the
// registry, from where it entered the system call (syscall.Syscall, as the
// runtime's own dump shows it), while ptrace walks its thread down to the
// raw system call.
func TestEBPFWallParked(t *testing.T) {
	requireEBPF(t)
	p, _, _ := startParked(t)
	stacks := func(collector string) []string {
		t.Helper()
		out, stderr, code := tool(t, "profile", "-wall", "-collector", collector, "-hz", "20", "-duration", "500ms", "-format", "folded", strconv.Itoa(p.pid()))
		if code != 0 {
			t.Fatalf("-collector %s: exit %d: %s", collector, code, stderr)
		}
		var keys []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if i := strings.LastIndexByte(l, ' '); i > 0 {
				k := l[:i]
				if j := strings.Index(k, ";syscall.Syscall;"); j >= 0 {
					k = k[:j+len(";syscall.Syscall")]
				}
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return slices.Compact(keys)
	}
	e, pt := stacks("ebpf"), stacks("ptrace")
	p.checkRunning(t)
	checkDetached(t)
	if len(e) < 10 || !slices.Equal(e, pt) {
		t.Errorf("ebpf -wall stacks differ from ptrace's:\nebpf:\n%s\nptrace:\n%s", strings.Join(e, "\n"), strings.Join(pt, "\n"))
	}
	lineage := 0
	for _, k := range e {
		if strings.Contains(k, "created by main.") {
			lineage++
		}
	}
	if lineage == 0 {
		t.Errorf("no stack with a created-by frame of the program:\n%s", strings.Join(e, "\n"))
	}
}

// TestEBPFWallRunning: under -wall the running goroutines come from the
// program's samples, with their lineage stitched.
func TestEBPFWallRunning(t *testing.T) {
	pb, _ := profileTree(t, "-wall", "-collector", "ebpf", "-hz", "20", "-duration", "1s")
	spinning := 0
	for _, s := range readProfile(t, pb).Sample {
		for _, l := range s.Location {
			if l.Line[0].Function.Name == "main.spin" {
				spinning++
			}
		}
	}
	if spinning == 0 {
		t.Error("no sample of a running (spinning) goroutine in the wall-clock profile")
	}
}

// TestEBPFWallEveryTick: a wall-clock profile counts every goroutine at
// every tick, also the ones running on a thread the kernel kept off the
// CPU since the previous tick (8 workers on fewer CPUs: the program saw
// none of them run): busy's 8 workers, all created by main.main, are
// counted 8 times a tick, as the ptrace collector, which stops the threads
// that run them, counts them (not compared here: under load its ticks take
// as long as the slowest thread takes to stop).
func TestEBPFWallEveryTick(t *testing.T) {
	requireEBPF(t)
	p := start(t, fixture(t, "busy"))
	for _, collector := range []string{"ebpf"} {
		out, stderr, code := tool(t, "profile", "-wall", "-stats", "-collector", collector, "-hz", "20", "-duration", "1s", "-format", "folded", strconv.Itoa(p.pid()))
		if code != 0 {
			t.Fatalf("-collector %s: exit %d: %s", collector, code, stderr)
		}
		ticks := 0
		if m := regexp.MustCompile(`(\d+) wall-clock ticks`).FindStringSubmatch(stderr); m != nil {
			ticks, _ = strconv.Atoi(m[1])
		}
		workers := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if i := strings.LastIndexByte(l, ' '); i > 0 && strings.HasPrefix(l, "created by main.main;") {
				n, _ := strconv.Atoi(l[i+1:])
				workers += n
			}
		}
		// A worker caught between two states at a tick may be missed or
		// seen twice; allow one per worker.
		if ticks < 10 || workers < 8*ticks-8 || workers > 8*ticks+8 {
			t.Errorf("-collector %s: %d worker samples in %d ticks, want about %d\n%s\n%s", collector, workers, ticks, 8*ticks, stderr, out)
		}
		if testing.Verbose() {
			t.Logf("-collector %s: %d worker samples in %d ticks\n%s", collector, workers, ticks, stderr)
		}
	}
	p.checkRunning(t)
	checkDetached(t)
}

// TestChooseCollector: the default is ebpf unless something rules it out,
// and then the reason is given; an explicit choice is taken as is.
func TestChooseCollector(t *testing.T) {
	refuse := func() error { return errors.New("no BTF") }
	allow := func() error { return nil }
	for _, tc := range []struct {
		pf         profileFlags
		arch       string
		usable     func() error
		name, want string
	}{
		{profileFlags{}, "amd64", allow, "ebpf", ""},
		{profileFlags{}, "amd64", refuse, "ptrace", "no BTF"},
		{profileFlags{}, "arm64", allow, "ptrace", "amd64 only"},
		{profileFlags{consistent: true}, "amd64", allow, "ptrace", "-consistent"},
		{profileFlags{collector: "ebpf"}, "amd64", refuse, "ebpf", ""},
	} {
		name, why := chooseCollector(tc.pf, tc.arch, tc.usable)
		if name != tc.name || !strings.Contains(why, tc.want) || (tc.want == "") != (why == "") {
			t.Errorf("chooseCollector(%+v, %s) = %s, %q; want %s, %q", tc.pf, tc.arch, name, why, tc.name, tc.want)
		}
	}
}

// TestEBPFNoBTF: on a kernel without BTF (played by pointing the collector
// at a missing file) the default falls back to ptrace, saying why on its one
// collector line, and an explicit -collector ebpf fails with one line.
func TestEBPFNoBTF(t *testing.T) {
	t.Setenv(btfEnv, filepath.Join(t.TempDir(), "no-vmlinux"))
	p := start(t, fixture(t, "busy"))
	_, stderr, code := tool(t, "profile", "-native", "-hz", "99", "-duration", "300ms", "-format", "folded", strconv.Itoa(p.pid()))
	if code != 0 || !strings.HasPrefix(stderr, "golineage: collector ptrace (ebpf collector unavailable: no kernel BTF") {
		t.Errorf("default collector without BTF: exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = tool(t, "profile", "-native", "-collector", "ebpf", "-duration", "300ms", "-format", "folded", strconv.Itoa(p.pid()))
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no kernel BTF") {
		t.Errorf("-collector ebpf without BTF: exit %d, stderr:\n%s; want 1 and one line", code, stderr)
	}
	p.checkRunning(t)
	checkDetached(t)
}

// TestEBPFLineageOff: a target run with GODEBUG=lineage=0 is profiled by
// the ebpf collector with native stacks, the collector line saying why.
func TestEBPFLineageOff(t *testing.T) {
	requireEBPF(t)
	exe := fixture(t, "busy")
	requireABI(t, exe)
	p := start(t, exe, "GODEBUG=lineage=0")
	out, stderr, code := tool(t, "profile", "-hz", "99", "-duration", "500ms", "-format", "folded", strconv.Itoa(p.pid()))
	if code != 0 || !strings.HasPrefix(stderr, "golineage: collector ebpf (lineage records are off") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(out, "main.work") || strings.Contains(out, "created by") {
		t.Errorf("want native stacks of main.work without lineage:\n%s", out)
	}
	p.checkRunning(t)
	checkDetached(t)
}

// TestEBPFUnprivileged: run as an unprivileged user (no capabilities),
// golineage falls back to ptrace by default, saying why, and fails with
// -collector ebpf: one line each, exit 0 and 1.
func TestEBPFUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipping: needs root to run processes as another user")
	}
	// Both processes run as nobody, from a directory nobody can read.
	dir, err := os.MkdirTemp("", "golineage-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cp := func(src string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	tool, busy := cp(toolBinary(t)), cp(fixture(t, "busy"))
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	target := exec.Command(busy)
	target.SysProcAttr = nobody
	target.Stdout = io.Discard
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	run := func(args ...string) (string, int) {
		cmd := exec.Command(tool, append([]string{"profile", "-native", "-hz", "99", "-duration", "300ms", "-format", "folded"}, append(args, strconv.Itoa(target.Process.Pid))...)...)
		cmd.SysProcAttr = nobody
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stderr.String(), code
	}
	stderr, code := run()
	if code != 0 || !strings.HasPrefix(stderr, "golineage: collector ptrace (ebpf collector unavailable: needs root, or CAP_BPF and CAP_PERFMON)\n") {
		t.Errorf("default collector as nobody: exit %d, stderr:\n%s", code, stderr)
	}
	stderr, code = run("-collector", "ebpf")
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "CAP_BPF") {
		t.Errorf("-collector ebpf as nobody: exit %d, stderr:\n%s; want 1 and one line", code, stderr)
	}
}

// TestEBPFNoABI: a binary without the lineage ABI (an upstream build,
// played by scrubbing the header's cookie) gets one line and exit 1, and
// with -native a profile from the ebpf collector.
func TestEBPFNoABI(t *testing.T) {
	requireEBPF(t)
	p := start(t, withoutABI(t, fixture(t, "busy")))
	_, stderr, code := tool(t, "profile", "-duration", "300ms", "-format", "folded", strconv.Itoa(p.pid()))
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "does not publish the goroutine lineage ABI") {
		t.Errorf("exit %d, stderr:\n%s; want 1 and one line", code, stderr)
	}
	out, stderr, code := tool(t, "profile", "-native", "-duration", "300ms", "-format", "folded", strconv.Itoa(p.pid()))
	if code != 0 || stderr != "golineage: collector ebpf\n" || !strings.Contains(out, "main.work") {
		t.Errorf("-native: exit %d, stderr:\n%s\nstdout:\n%s", code, stderr, out)
	}
	p.checkRunning(t)
	checkDetached(t)
}

// TestEBPFVanishingTarget: a target that exits during the profile (killed
// once golineage says which collector runs, so attached) ends it with one
// line: "sampling ended early" and exit 0 with the samples taken, or exit 1
// if it had none; nothing is left attached.
func TestEBPFVanishingTarget(t *testing.T) {
	requireEBPF(t)
	cmd := exec.Command(fixture(t, "busy"))
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	pr, pw := io.Pipe()
	code := make(chan int)
	go func() {
		c := cli([]string{"profile", "-native", "-collector", "ebpf", "-hz", "199", "-duration", "60s", "-format", "folded", strconv.Itoa(pid)}, io.Discard, pw)
		pw.Close()
		code <- c
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) == 1 {
			cmd.Process.Kill()
		}
	}
	c := <-code
	if len(lines) != 2 || lines[0] != "golineage: collector ebpf" ||
		!(c == 0 && strings.HasPrefix(lines[1], fmt.Sprintf("golineage: sampling ended early: process %d exited", pid)) ||
			c == 1 && lines[1] == fmt.Sprintf("golineage: process %d exited", pid)) {
		t.Errorf("exit %d, stderr:\n%s\nwant the collector line, then that sampling ended early (exit 0) or that the process exited (exit 1)", c, strings.Join(lines, "\n"))
	}
	checkDetached(t)
}

// withoutABI returns a copy of executable exe whose lineage header cannot
// be found (its cookie zeroed): a binary built without the ABI.
func withoutABI(t *testing.T, exe string) string {
	t.Helper()
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, lineageabi.Magic, make([]byte, len(lineageabi.Magic)))
	noabi := filepath.Join(t.TempDir(), "noabi")
	if err := os.WriteFile(noabi, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return noabi
}
