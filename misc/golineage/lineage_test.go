package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// treeNode is what the fixture's runtime.Stack said of one goroutine.
type treeNode struct {
	parent string
	fn     string
	pos    string // file:line
}

func parseTree(t *testing.T, report []string) (map[string]treeNode, map[string]bool) {
	nodes := map[string]treeNode{}
	leaves := map[string]bool{}
	for _, l := range report {
		f := strings.Fields(l)
		switch {
		case len(f) == 5 && f[0] == "node":
			nodes[f[1]] = treeNode{parent: f[2], fn: f[3], pos: f[4]}
		case len(f) == 2 && f[0] == "leaf":
			leaves[f[1]] = true
		}
	}
	if len(leaves) != 6 || len(nodes) < 13 {
		t.Fatalf("fixture reported %d leaves and %d nodes, want 6 and 13:\n%s", len(leaves), len(nodes), strings.Join(report, "\n"))
	}
	return nodes, leaves
}

// expected is the lineage of goroutine g according to the program itself.
func expected(nodes map[string]treeNode, g string) []string {
	var out []string
	for g != "1" {
		n, ok := nodes[g]
		if !ok {
			break
		}
		// The lineage ABI (version 2) keeps the parent's goid only: the
		// older steps say no "in goroutine".
		if len(out) == 0 {
			out = append(out, fmt.Sprintf("created by %s at %s in goroutine %s", n.fn, n.pos, n.parent))
		} else {
			out = append(out, fmt.Sprintf("created by %s at %s", n.fn, n.pos))
		}
		g = n.parent
	}
	return out
}

// lineageByThread maps "thread TID goroutine G" to its created-by lines.
func lineageByThread(out string) map[string][]string {
	m := map[string][]string{}
	for _, th := range parseThreads(out) {
		if strings.Contains(th.head, " goroutine ") {
			m[strings.TrimSuffix(strings.Fields(th.head)[1]+" "+strings.Fields(th.head)[3], ":")] = th.lineage
		}
	}
	return m
}

func checkLineage(t *testing.T, who string, got map[string][]string, nodes map[string]treeNode, leaves map[string]bool) {
	t.Helper()
	seen := 0
	for k, lines := range got {
		g := strings.Fields(k)[1]
		if !leaves[g] {
			continue
		}
		seen++
		if want := expected(nodes, g); strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: thread/goroutine %s lineage:\n%s\nwant (from the program's runtime.Stack):\n%s", who, k, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if len(lines) != 4 {
			t.Errorf("%s: goroutine %s has %d lineage steps, want 4 (worker, handler, server, main)", who, g, len(lines))
		}
	}
	if seen == 0 {
		t.Errorf("%s: no leaf goroutine found on any thread", who)
	}
}

// TestLineageCrossCheck runs the goroutine-tree fixture and checks that the
// live reader, the core reader, the gdb extension and both samplers (ptrace
// and eBPF) report for each leaf goroutine exactly the lineage the program
// itself saw through runtime.Stack, including ancestors that have exited.
func TestLineageCrossCheck(t *testing.T) {
	exe := fixture(t, "tree")
	requireABI(t, exe)
	p := start(t, exe, "GODEBUG=lineagestack=16")
	nodes, leaves := parseTree(t, p.report)

	out, stderr, code := tool(t, "stacks", fmt.Sprint(p.pid()))
	if code != 0 {
		t.Fatalf("stacks: exit %d: %s", code, stderr)
	}
	p.checkRunning(t)
	checkLineage(t, "stacks PID", lineageByThread(out), nodes, leaves)
	if !strings.Contains(out, "\tmain.handler.gowrap1(...)") {
		t.Errorf("no creation stack (GODEBUG=lineagestack=16) in output:\n%s", out)
	}

	t.Run("core", func(t *testing.T) {
		core := gcore(t, p.pid())
		p.checkRunning(t)
		cout, stderr, code := tool(t, "stacks", "--core", core, exe)
		if code != 0 {
			t.Fatalf("stacks --core: exit %d: %s", code, stderr)
		}
		fromCore := lineageByThread(cout)
		checkLineage(t, "stacks --core", fromCore, nodes, leaves)

		gout := runGDB(t, exe, core)
		fromGDB := lineageByThread(gout)
		checkLineage(t, "gdb golineage-bt", fromGDB, nodes, leaves)
		if fmt.Sprint(sorted(fromCore)) != fmt.Sprint(sorted(fromGDB)) {
			t.Errorf("core reader and gdb disagree:\n%v\n%v", sorted(fromCore), sorted(fromGDB))
		}
	})

	for _, collector := range []string{"ptrace", "ebpf"} {
		t.Run("profile-"+collector, func(t *testing.T) {
			if collector == "ebpf" {
				requireEBPF(t)
			}
			pb := filepath.Join(t.TempDir(), "p.pb.gz")
			_, stderr, code := tool(t, "profile", "-collector", collector, "-hz", "199", "-duration", "2s", "-o", pb, fmt.Sprint(p.pid()))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			p.checkRunning(t)
			checkProfileLineage(t, pb, nodes, leaves)
		})
	}
}

// checkProfileLineage checks every sample labelled with a leaf goroutine:
// below its goexit frame come exactly the program's created-by steps.
func checkProfileLineage(t *testing.T, path string, nodes map[string]treeNode, leaves map[string]bool) {
	t.Helper()
	prof := readProfile(t, path)
	checked := 0
	for _, s := range prof.Sample {
		gs := s.NumLabel["goroutine"]
		if len(gs) != 1 || !leaves[fmt.Sprint(gs[0])] {
			continue
		}
		var got []string
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if strings.HasPrefix(ln.Function.Name, "created by ") {
					got = append(got, fmt.Sprintf("%s at %s:%d", ln.Function.Name, ln.Function.Filename, ln.Line))
				}
			}
		}
		var want []string
		for _, w := range expected(nodes, fmt.Sprint(gs[0])) {
			if i := strings.LastIndex(w, " in goroutine "); i >= 0 {
				w = w[:i]
			}
			want = append(want, w)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("sample of goroutine %d: lineage frames\n%s\nwant\n%s", gs[0], strings.Join(got, "\n"), strings.Join(want, "\n"))
			return
		}
		checked++
	}
	if checked == 0 {
		t.Errorf("no sample of a leaf goroutine in %d samples", len(prof.Sample))
	}
}

func sorted(m map[string][]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+": "+strings.Join(v, " | "))
	}
	sort.Strings(out)
	return out
}

func runGDB(t *testing.T, args ...string) string {
	t.Helper()
	return runGDBCommand(t, "golineage-bt", args...)
}

// runGDBCommand runs one of the extension's commands in batch mode.
func runGDBCommand(t *testing.T, command string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("skipping: gdb not installed (apt-get install gdb)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	script, _ := filepath.Abs("gdb/golineage.py")
	cmdArgs := []string{"-batch", "-nx", "-ex", "source " + script, "-ex", command}
	cmd := exec.CommandContext(ctx, "gdb", append(cmdArgs, args...)...)
	cmd.Env = append(os.Environ(), "GOLINEAGE="+toolBinary(t)) // names frames of stripped binaries
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("gdb: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "Python Exception") || strings.Contains(out.String(), "Error occurred in Python") {
		t.Fatalf("gdb extension failed:\n%s", out.String())
	}
	return out.String()
}

// TestStrippedLineage: the same lineage from binaries built with -s -w,
// position-dependent and PIE (the header's address then moves with the load
// bias).
func TestStrippedLineage(t *testing.T) {
	for _, flags := range [][]string{{"-ldflags=-s -w"}, {"-buildmode=pie", "-ldflags=-s -w"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			exe := fixture(t, "tree", flags...)
			requireABI(t, exe)
			p := start(t, exe)
			nodes, leaves := parseTree(t, p.report)
			out, stderr, code := tool(t, "stacks", fmt.Sprint(p.pid()))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			p.checkRunning(t)
			checkLineage(t, "stacks (stripped)", lineageByThread(out), nodes, leaves)
		})
	}
}

// TestGDBStripped: on a core of a stripped binary, where gdb has no
// symbols, the gdb command names frames and "created by" lines through the
// pclntab (golineage symbolize) and prints the same lineage, creation
// stacks included, as golineage stacks --core.
func TestGDBStripped(t *testing.T) {
	exe := fixture(t, "tree", "-ldflags=-s -w")
	requireABI(t, exe)
	p := start(t, exe, "GODEBUG=lineagestack=16")
	nodes, leaves := parseTree(t, p.report)
	core := gcore(t, p.pid())
	cout, stderr, code := tool(t, "stacks", "--core", core, exe)
	if code != 0 {
		t.Fatalf("stacks --core: exit %d: %s", code, stderr)
	}
	gout := runGDB(t, exe, core)
	fromCore, fromGDB := lineageByThread(cout), lineageByThread(gout)
	checkLineage(t, "gdb golineage-bt (stripped)", fromGDB, nodes, leaves)
	if fmt.Sprint(sorted(fromCore)) != fmt.Sprint(sorted(fromGDB)) {
		t.Errorf("core reader and gdb disagree on a stripped binary:\n%v\n%v", sorted(fromCore), sorted(fromGDB))
	}
	// Everything else too: native frames (gdb has no CFI for them, so the
	// extension walks frame pointers through golineage unwind), creation
	// stacks and "created by" lines, compared line for line.
	if !strings.Contains(gout, "\tmain.handler.gowrap1(...)") {
		t.Errorf("gdb output lacks named creation stacks:\n%s", gout)
	}
	if a, b := normStacks(cout), normStacks(gout); a != b {
		t.Errorf("gdb golineage-bt on a stripped core differs from golineage stacks --core:\n--- stacks --core\n%s\n--- gdb\n%s", a, b)
	}
}

// normStacks keeps the thread sections of a golineage stacks or golineage-bt
// output, without blank lines and thread states (gdb knows none).
func normStacks(out string) string {
	var keep []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "thread ") {
			in = true
			if i := strings.Index(l, " ["); i > 0 && strings.HasSuffix(l, "]:") {
				l = l[:i] + ":"
			}
		}
		if in && strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestLineageDepthBound: with GODEBUG=lineage=2 the chain keeps two
// ancestors and says the rest were not recorded.
func TestLineageDepthBound(t *testing.T) {
	exe := fixture(t, "tree")
	requireABI(t, exe)
	p := start(t, exe, "GODEBUG=lineage=2")
	nodes, leaves := parseTree(t, p.report)
	out, stderr, code := tool(t, "stacks", fmt.Sprint(p.pid()))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	seen := 0
	for k, lines := range lineageByThread(out) {
		g := strings.Fields(k)[1]
		if !leaves[g] {
			continue
		}
		seen++
		want := expected(nodes, g)
		// The goroutine's own step plus two ancestors.
		if len(lines) != 3 || lines[0] != want[0] || lines[1] != want[1] || lines[2] != want[2] {
			t.Errorf("goroutine %s:\n%s\nwant the first 3 of:\n%s", g, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	}
	if seen == 0 || !strings.Contains(out, "older ancestors not recorded: true depth 4") {
		t.Errorf("no truncated leaf chain in:\n%s", out)
	}
}

// TestGDBLive attaches gdb in batch mode to a live fixture and checks the
// command prints every thread and leaves the process running.
func TestGDBLive(t *testing.T) {
	p := start(t, fixture(t, "blocked"))
	out := runGDB(t, "-p", fmt.Sprint(p.pid()))
	p.checkRunning(t)
	if n := strings.Count(out, "\nthread "); n < len(mustTasks(t, p.pid()))-1 {
		t.Errorf("gdb printed %d threads:\n%s", n, out)
	}
	if !strings.Contains(out, "main.S.run") {
		t.Errorf("gdb output lacks the fixture's frames:\n%s", out)
	}
}
