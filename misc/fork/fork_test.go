package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// env is a scratch repository and a fake upstream GOROOT: a few files, a src/make.bash
// that "builds" a bin/go script, which logs its arguments.
type env struct {
	t        *testing.T
	repo     string // the fork's repository: patches/, src/, VERSION, misc/
	upstream string
	work     string // the work tree, repo/goroot
}

const fakeMakeBash = `#!/bin/sh
echo build >>"$FAKE_BUILDS"
mkdir -p internal/runtime/sys && echo generated >internal/runtime/sys/zversion.go
mkdir -p ../bin
printf '#!/bin/sh\necho "$@" >>"$FAKE_GO"\n' >../bin/go
chmod +x ../bin/go
`

// testUpstream is the upstream release the repository's VERSION names: the
// tests' fake trees use it, so that no test names a release of its own.
var testUpstream = func() string {
	v, err := os.ReadFile("../../VERSION")
	if err != nil {
		panic(err)
	}
	return upstreamOf(v)
}()

func newEnv(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed:", err)
	}
	dir := t.TempDir()
	e := &env{t: t, repo: filepath.Join(dir, "repo"), upstream: filepath.Join(dir, "up")}
	e.work = filepath.Join(e.repo, "goroot")
	e.write(e.repo, "VERSION", testUpstream+"-test1\n")
	e.write(e.repo, "patches/series", "# empty\n")
	e.write(e.repo, "misc/go.mod", "module x\n")
	e.write(e.upstream, "VERSION", testUpstream+"\ntime 2026-10-19T22:20:36Z\n")
	e.write(e.upstream, "go.env", "GOTOOLCHAIN=auto\n")
	e.write(e.upstream, "src/runtime/proc.go", "package runtime\n\nfunc a() {}\n\nfunc b() {}\n")
	e.write(e.upstream, "src/runtime/asm_amd64.s", "TEXT ·a(SB),0,$0\n\tRET\n")
	e.write(e.upstream, "src/make.bash", fakeMakeBash)
	e.write(e.upstream, "bin/go", "prebuilt binary, not source\n")
	e.write(e.upstream, "pkg/tool/x", "prebuilt\n")
	t.Setenv("FORK_UPSTREAM", e.upstream)
	t.Setenv("FORK_WORK", "")
	t.Setenv("FAKE_BUILDS", filepath.Join(dir, "builds.log"))
	t.Setenv("FAKE_GO", filepath.Join(dir, "go.log"))
	return e
}

func (e *env) write(dir, name, content string) {
	e.t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(dir, name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// fork runs the tool in process and returns its output (stdout and stderr) and error.
func (e *env) fork(args ...string) (string, error) {
	e.t.Helper()
	var out bytes.Buffer
	err := run(append([]string{"-top", e.repo}, args...), &out, &out)
	return out.String(), err
}

func (e *env) mustFork(args ...string) string {
	e.t.Helper()
	out, err := e.fork(args...)
	if err != nil {
		e.t.Fatalf("fork %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// git runs git in the work tree.
func (e *env) git(args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", e.work, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (e *env) commit(msg string) {
	e.t.Helper()
	e.git("add", "-A")
	e.git("commit", "-qm", msg)
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	s, err := readSnapshot(e.repo)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func names(s snapshot) string {
	var l []string
	for k := range s {
		l = append(l, k)
	}
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// edit makes the kinds of change a developer makes in the work tree, as four commits: an
// upstream file changed; a new file; an upstream file changed with a new file; a change to
// the fork's own file introduced two commits before.
func (e *env) edit() {
	e.editFirst3("package runtime\n\nfunc lineage() {}\n")
	e.write(e.work, "src/runtime/lineage.go", "package runtime\n\nfunc lineage() { a() }\n")
	e.commit("runtime: lineage calls a")
}

// editFirst3 makes edit's first three commits, patch 2 adding lineage.go with content.
func (e *env) editFirst3(lineage string) {
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() {}\n")
	e.commit("runtime: make a call b\n\nBecause the test says so.\n\nTests: none (a fake series)")
	e.write(e.work, "src/runtime/lineage.go", lineage)
	e.commit("runtime: add lineage.go\n\nTests: none (a fake series)")
	e.write(e.work, "src/runtime/asm_amd64.s", "TEXT ·a(SB),0,$0\n\tMOVQ $0, BP\n\tRET\n")
	e.write(e.work, "src/runtime/lineage_test.go", "package runtime\n")
	e.commit("runtime: clear BP in a, with a test")
}

const wantSeries = seriesHeader + `0001-runtime-make-a-call-b.patch
0002-runtime-add-lineage-go.patch
	src/runtime/lineage.go
0003-runtime-clear-bp-in-a-with-a-test.patch
	src/runtime/lineage_test.go
0004-runtime-lineage-calls-a.patch
`

func TestRouting(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	if _, err := os.Stat(filepath.Join(e.work, "bin")); err == nil {
		t.Errorf("apply copied upstream's prebuilt bin/ into the work tree")
	}
	if got := e.read(e.work, "VERSION"); got != testUpstream+"-test1\n" {
		t.Errorf("work tree VERSION = %q, want the fork's", got)
	}
	e.edit()
	e.mustFork("extract")
	snap := e.snapshot()
	want := `VERSION
patches/0001-runtime-make-a-call-b.patch
patches/0002-runtime-add-lineage-go.patch
patches/0003-runtime-clear-bp-in-a-with-a-test.patch
patches/0004-runtime-lineage-calls-a.patch
patches/series
src/runtime/lineage.go
src/runtime/lineage_test.go`
	if got := names(snap); got != want {
		t.Fatalf("extracted files:\n%s\nwant:\n%s", got, want)
	}
	if got := snap["patches/series"]; got != wantSeries {
		t.Errorf("series:\n%s\nwant:\n%s", got, wantSeries)
	}
	// The repository holds a new file as its introducing patch brings it.
	if got := snap["src/runtime/lineage.go"]; got != "package runtime\n\nfunc lineage() {}\n" {
		t.Errorf("src/runtime/lineage.go = %q, want the content of the commit that added it", got)
	}
	p1 := snap["patches/0001-runtime-make-a-call-b.patch"]
	if !strings.HasPrefix(p1, "Subject: runtime: make a call b\n\nBecause the test says so.\n\nTests: none (a fake series)\n---\ndiff --git a/src/runtime/proc.go") {
		t.Errorf("patch 1 does not start with its message and diff:\n%s", p1)
	}
	if p2 := snap["patches/0002-runtime-add-lineage-go.patch"]; p2 != "Subject: runtime: add lineage.go\n\nTests: none (a fake series)\n---\n" {
		t.Errorf("patch 2 (new file only) = %q, want a message and no diff", p2)
	}
	p3 := snap["patches/0003-runtime-clear-bp-in-a-with-a-test.patch"]
	if strings.Contains(p3, "lineage_test.go") || !strings.Contains(p3, "asm_amd64.s") {
		t.Errorf("patch 3 should carry the upstream change, not the new file:\n%s", p3)
	}
	p4 := snap["patches/0004-runtime-lineage-calls-a.patch"]
	if !strings.Contains(p4, "diff --git a/src/runtime/lineage.go b/src/runtime/lineage.go") || !strings.Contains(p4, "+func lineage() { a() }") {
		t.Errorf("patch 4 should carry the change to the fork's file as a diff:\n%s", p4)
	}
	for name, p := range snap {
		if strings.HasPrefix(name, "patches/0") {
			for _, bad := range []string{"\nindex ", "\nFrom ", "\nDate: "} {
				if strings.Contains(p, bad) {
					t.Errorf("%s carries a header that changes between extractions (%q)", name, bad)
				}
			}
		}
	}
}

func TestRoundTripAndDeterminism(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.edit()
	e.mustFork("extract")
	first := e.snapshot()
	e.mustFork("extract")
	if d := differences(first, e.snapshot()); len(d) > 0 {
		t.Fatalf("a second extraction differs from the first: %v", d)
	}
	// edit's patch 4 changes lineage.go, which patch 2 introduces: apply and extract carry
	// such a diff, and check rejects it (TestCheckOwnedFiles).
	if _, err := e.fork("check", "-nobuild"); !errors.Is(err, errOwnedFileChanged) {
		t.Fatalf("check of a patch changing an earlier patch's file: %v", err)
	}
	head := e.git("rev-parse", "HEAD^{tree}")
	if err := os.RemoveAll(e.work); err != nil {
		t.Fatal(err)
	}
	e.mustFork("apply")
	if again := e.git("rev-parse", "HEAD^{tree}"); again != head {
		t.Errorf("re-applying the extracted series gave tree %s, the extracted work tree had %s", again, head)
	}
	e.mustFork("extract")
	if d := differences(first, e.snapshot()); len(d) > 0 {
		t.Fatalf("apply then extract changed the series: %v", d)
	}
	if got := e.read(e.work, "src/runtime/lineage.go"); !strings.Contains(got, "{ a() }") {
		t.Errorf("re-applied work tree lacks patch 4's change to a fork file: %q", got)
	}
	// Each commit holds its own new files: at patch 2, lineage.go exists, lineage_test.go not yet.
	files := e.git("ls-tree", "-r", "--name-only", "HEAD~3")
	if !strings.Contains(files, "src/runtime/lineage.go") || strings.Contains(files, "lineage_test.go") {
		t.Errorf("commit of patch 2 holds:\n%s", files)
	}
	if log := e.git("log", "--format=%s", "upstream..HEAD"); !strings.HasPrefix(log, "fork: VERSION\nruntime: lineage calls a\n") {
		t.Errorf("history after upstream:\n%s", log)
	}
}

// editFolded makes edit's changes with patch 4's change to lineage.go folded into patch 2,
// which introduces the file: the series check accepts.
func (e *env) editFolded() {
	e.editFirst3("package runtime\n\nfunc lineage() { a() }\n")
}

// TestCheckOwnedFiles plants each violation of the rule on the fork's own files: a later
// patch's diff of an earlier patch's new file, a patch's diff of its own new file, and a
// src/ file that differs from what the applied series builds.
func TestCheckOwnedFiles(t *testing.T) {
	t.Run("folded", func(t *testing.T) {
		e := newEnv(t)
		e.mustFork("apply")
		e.editFolded()
		e.mustFork("extract")
		out := e.mustFork("check", "-nobuild")
		for _, want := range []string{"no patch changes a new file", "reproduces"} {
			if !strings.Contains(out, want) {
				t.Errorf("check output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("later patch", func(t *testing.T) {
		e := newEnv(t)
		e.mustFork("apply")
		e.edit()
		e.write(e.work, "src/runtime/lineage_test.go", "package runtime\n\n// A test.\n")
		e.commit("runtime: change lineage_test.go")
		e.mustFork("extract")
		_, err := e.fork("check", "-nobuild")
		if !errors.Is(err, errOwnedFileChanged) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("check: %v; want one line wrapping errOwnedFileChanged", err)
		}
		for _, want := range []string{
			"patches/0004-runtime-lineage-calls-a.patch changes src/runtime/lineage.go (introduced by patches/0002-runtime-add-lineage-go.patch)",
			"patches/0005-runtime-change-lineage-test-go.patch changes src/runtime/lineage_test.go (introduced by patches/0003-runtime-clear-bp-in-a-with-a-test.patch)",
			"git rebase -i upstream",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("check error lacks %q:\n%v", want, err)
			}
		}
	})
	// plant appends a diff of lineage.go to patch p of a folded series and runs check.
	plant := func(t *testing.T, p, header string) error {
		e := newEnv(t)
		e.mustFork("apply")
		e.editFolded()
		e.mustFork("extract")
		e.write(e.repo, p, e.read(e.repo, p)+header+"--- a/src/runtime/lineage.go\n+++ b/src/runtime/lineage.go\n@@ -1,3 +1,3 @@\n package runtime\n \n-func lineage() { a() }\n+func lineage() { b() }\n")
		_, err := e.fork("check", "-nobuild")
		return err
	}
	t.Run("own file", func(t *testing.T) {
		p := "patches/0002-runtime-add-lineage-go.patch"
		err := plant(t, p, "diff --git a/src/runtime/lineage.go b/src/runtime/lineage.go\n")
		if !errors.Is(err, errOwnedFileChanged) || !strings.Contains(err.Error(), p+" changes src/runtime/lineage.go, which it introduces itself") {
			t.Errorf("check of a patch changing its own new file: %v", err)
		}
	})
	t.Run("src stale", func(t *testing.T) {
		// A traditional diff (no "diff --git" line), which git apply takes: the first rule
		// does not see it, the second does.
		err := plant(t, "patches/0003-runtime-clear-bp-in-a-with-a-test.patch", "")
		if !errors.Is(err, errSrcStale) || !strings.Contains(err.Error(), "src/runtime/lineage.go differs from the last commit") || strings.Contains(err.Error(), "\n") {
			t.Errorf("check of a series whose src/ is stale: %v", err)
		}
	})
}

// TestCheckPatchTests plants patches that change code with and without a test of it: a
// test file or a testdata/ file of the package counts, a test of another package does not,
// and a "Tests: none (reason)" line in the message stands for the test.
func TestCheckPatchTests(t *testing.T) {
	e := newEnv(t)
	e.write(e.upstream, "src/cmd/x/x.go", "package main\n\nfunc main() {}\n")
	e.write(e.upstream, "src/runtime/cgo/gcc.c", "int x;\n")
	e.mustFork("apply")
	// With tests: a _test.go file, a testdata/ file, a new file with its test.
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() {}\n")
	e.write(e.work, "src/runtime/proc_test.go", "package runtime\n")
	e.commit("runtime: make a call b, with a test")
	e.write(e.work, "src/runtime/asm_amd64.s", "TEXT ·a(SB),0,$0\n\tMOVQ $0, BP\n\tRET\n")
	e.write(e.work, "src/runtime/testdata/testprog/bp.go", "package main\n")
	e.commit("runtime: clear BP in a, with a test program")
	// Documentation and files outside src/ are not code.
	e.write(e.work, "go.env", "GOTOOLCHAIN=local\n")
	e.write(e.work, "src/runtime/HACKING.md", "notes\n")
	e.commit("go.env: local")
	// Without: a test of another package, a C file, an empty reason.
	e.write(e.work, "src/cmd/x/x.go", "package main\n\nfunc main() { println() }\n")
	e.write(e.work, "src/runtime/x_test.go", "package runtime\n")
	e.commit("cmd/x: print a line, with a test of another package")
	e.write(e.work, "src/runtime/cgo/gcc.c", "int x = 1;\n")
	e.commit("runtime/cgo: set x\n\nTests: none ()")
	e.write(e.work, "src/runtime/lineage.go", "package runtime\n")
	e.write(e.work, "src/runtime/lineage_amd64.s", "\n")
	e.commit("runtime: add lineage.go\n\nTests: none")
	// Why not, said.
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() { println() }\n")
	e.commit("runtime: make b print\n\nTests: none (printing is\nchecked by hand)")
	e.mustFork("extract")
	_, err := e.fork("check", "-nobuild")
	if !errors.Is(err, errNoTest) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("check: %v; want one line wrapping errNoTest", err)
	}
	for _, want := range []string{
		"patches/0004-cmd-x-print-a-line-with-a-test-of-another-package.patch changes src/cmd/x/x.go but no test of cmd/x",
		"patches/0005-runtime-cgo-set-x.patch changes src/runtime/cgo/gcc.c but no test of runtime/cgo",
		"patches/0006-runtime-add-lineage-go.patch changes src/runtime/lineage.go and 1 more but no test of runtime",
		"Tests: none (reason)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check error lacks %q:\n%v", want, err)
		}
	}
	for _, unwanted := range []string{"0001", "0002", "0003", "0007", "more;"} {
		if strings.Contains(err.Error(), unwanted) {
			t.Errorf("check error names %q:\n%v", unwanted, err)
		}
	}
	// Tested or said why, the series passes.
	e.git("reset", "-q", "--hard", "HEAD~4")
	e.write(e.work, "src/runtime/cgo/gcc.c", "int x = 1;\n")
	e.write(e.work, "src/runtime/cgo/testdata/x.c", "int y;\n")
	e.commit("runtime/cgo: set x, with a test program")
	e.mustFork("extract")
	out := e.mustFork("check", "-nobuild")
	if !strings.Contains(out, "each patch that changes code changes a test of it") {
		t.Errorf("check output lacks the test rule's line:\n%s", out)
	}
}

func TestDiffFiles(t *testing.T) {
	diff := "diff --git a/src/x.go b/src/x.go\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-diff --git a/no b/no\n+x\n" +
		"diff --git a/src/a b/c.go b/src/a b/c.go\nnew file mode 100644\n" +
		"diff --git \"a/src/q\\tx.go\" \"b/src/q\\tx.go\"\n" +
		"diff --git a/src/old.go b/src/new.go\n"
	got := strings.Join(diffFiles([]byte(diff)), "|")
	if want := "src/x.go|src/a b/c.go|src/q\tx.go|src/old.go|src/new.go"; got != want {
		t.Errorf("diffFiles = %q, want %q", got, want)
	}
}

func TestExtractRemovesStaleFiles(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.edit()
	e.mustFork("extract")
	// Drop patch 2 (and with it lineage.go); patch 4 then no longer has a file to change.
	e.git("reset", "-q", "--hard", "upstream")
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() {}\n")
	e.write(e.work, "VERSION", testUpstream+"-test1\n")
	e.commit("runtime: only this")
	e.mustFork("extract")
	if got := names(e.snapshot()); got != "VERSION\npatches/0001-runtime-only-this.patch\npatches/series" {
		t.Errorf("after extract, the repository holds:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "src")); err == nil {
		t.Errorf("extract left the empty src/ directory behind")
	}
}

func TestHandEditedPatch(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.editFolded()
	e.mustFork("extract")
	p := filepath.Join(e.repo, "patches/0001-runtime-make-a-call-b.patch")
	orig := e.read(e.repo, "patches/0001-runtime-make-a-call-b.patch")
	// Still applies, but is not what extraction writes.
	e.write(e.repo, "patches/0001-runtime-make-a-call-b.patch", strings.Replace(orig, "Because the test says so.\n", "Because the test says so.  \n\n\n", 1))
	out, err := e.fork("check", "-nobuild")
	if err == nil || !strings.Contains(err.Error(), "0001-runtime-make-a-call-b.patch") {
		t.Errorf("check of a series that does not round-trip: err=%v\n%s", err, out)
	}
	// No longer applies.
	os.WriteFile(p, []byte(strings.Replace(orig, "-func a() {}", "-func a() { /* not upstream */ }", 1)), 0o644)
	if _, err := e.fork("check", "-nobuild"); err == nil || !strings.Contains(err.Error(), "0001-runtime-make-a-call-b.patch does not apply") {
		t.Errorf("check with a patch that does not apply: %v", err)
	}
	os.RemoveAll(e.work)
	if _, err := e.fork("apply"); err == nil || !strings.Contains(err.Error(), "0001-runtime-make-a-call-b.patch does not apply") {
		t.Errorf("apply with a patch that does not apply: %v", err)
	}
}

func TestRefusesDirtyWorkTree(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.write(e.repo, "patches/series", "# changed, so that apply must lay out again\n")
	e.write(e.work, "src/runtime/proc.go", "package runtime // edited, not committed\n")
	_, err := e.fork("apply")
	if err == nil || !strings.Contains(err.Error(), "uncommitted edits") || !strings.Contains(err.Error(), "./fork extract") {
		t.Fatalf("apply over uncommitted edits: %v", err)
	}
	if got := e.read(e.work, "src/runtime/proc.go"); !strings.Contains(got, "edited") {
		t.Errorf("the edit was lost")
	}
	if _, err := e.fork("make"); err == nil || !strings.Contains(err.Error(), "uncommitted edits") {
		t.Errorf("make over uncommitted edits: %v", err)
	}
	if _, err := e.fork("extract"); err == nil {
		t.Errorf("extract ran with uncommitted edits")
	}
}

func TestRefusesUnextractedCommits(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.edit()
	e.write(e.repo, "patches/series", "# changed, so that apply must lay out again\n")
	if _, err := e.fork("apply"); err == nil || !strings.Contains(err.Error(), "not extracted") {
		t.Fatalf("apply over commits not extracted: %v", err)
	}
	if out := e.mustFork("status"); !strings.Contains(out, "not extracted") || !strings.Contains(out, "applied:   stale") {
		t.Errorf("status:\n%s", out)
	}
	e.mustFork("extract")
	if out := e.mustFork("status"); strings.Contains(out, "not extracted") || !strings.Contains(out, "applied:   current") {
		t.Errorf("status after extract:\n%s", out)
	}
	// Once extracted, the work tree already holds the series.
	if out := e.mustFork("apply"); !strings.Contains(out, "already holds") {
		t.Errorf("apply after extract:\n%s", out)
	}
}

// TestMake covers make.bash's path: a plain tree, built once, incremental, refusing to
// replace edits, and turned into a developer's tree without touching its files.
func TestMake(t *testing.T) {
	e := newEnv(t)
	e.write(e.work+"-unused", "x", "") // FORK_WORK default is repo/goroot
	e.mustFork("make")
	if _, err := os.Stat(filepath.Join(e.work, ".git")); err == nil {
		t.Errorf("make laid out a git history; make.bash needs a plain tree")
	}
	builds := func() int { return strings.Count(e.read(filepath.Dir(e.repo), "builds.log"), "build\n") }
	if builds() != 1 {
		t.Fatalf("upstream's make.bash ran %d times, want 1", builds())
	}
	if golog := e.read(filepath.Dir(e.repo), "go.log"); strings.Contains(golog, "fpcheck") {
		t.Errorf("make built the fork's commands (./fork tools does): %q", golog)
	}
	e.mustFork("tools")
	golog := e.read(filepath.Dir(e.repo), "go.log")
	for _, c := range []string{"fpcheck", "golineage"} {
		if want := "build -C " + filepath.Join(e.repo, "misc", c) + " -o "; !strings.Contains(golog, want) {
			t.Errorf("tools did not build misc/%s (no %q): %q", c, want, golog)
		}
	}
	out := e.mustFork("make")
	if builds() != 1 || !strings.Contains(out, "up to date") {
		t.Errorf("a second make rebuilt (%d builds):\n%s", builds(), out)
	}
	if out := e.mustFork("status"); !strings.Contains(out, "built:     current") || !strings.Contains(out, "plain tree") || !strings.Contains(out, "edits:     none") {
		t.Errorf("status of a built plain tree:\n%s", out)
	}

	// apply on the current plain tree adds the history and keeps the files and the build.
	proc := filepath.Join(e.work, "src/runtime/proc.go")
	before, _ := os.Stat(proc)
	time.Sleep(10 * time.Millisecond)
	e.mustFork("apply")
	after, _ := os.Stat(proc)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("apply rewrote the files of a current plain tree")
	}
	if out := e.mustFork("status"); !strings.Contains(out, "built:     current") || !strings.Contains(out, "edits:     none") {
		t.Errorf("status after adding the history:\n%s", out)
	}
	e.mustFork("make")
	if builds() != 1 {
		t.Errorf("make rebuilt after apply added the history")
	}
}

func TestMakeRefusesEditedPlainTree(t *testing.T) {
	e := newEnv(t)
	e.mustFork("make")
	time.Sleep(10 * time.Millisecond)
	e.write(e.work, "src/runtime/proc.go", "package runtime // edited\n")
	e.write(e.repo, "patches/series", "# changed\n")
	if _, err := e.fork("make"); err == nil || !strings.Contains(err.Error(), "src/runtime/proc.go") {
		t.Fatalf("make over an edited plain tree: %v", err)
	}
	// Back to the inputs it was laid out from, apply keeps the edit as an uncommitted one.
	e.write(e.repo, "patches/series", "# empty\n")
	e.mustFork("apply")
	if st := e.git("status", "--porcelain"); !strings.Contains(st, "src/runtime/proc.go") {
		t.Errorf("the plain tree's edit does not show as uncommitted after apply: %q", st)
	}
}

func TestBadSeries(t *testing.T) {
	for _, tc := range []struct{ name, series, files, want string }{
		{"missing patch", "0001-a.patch\n", "", "patches/0001-a.patch does not exist"},
		{"missing file", "0001-a.patch\n\tsrc/runtime/x.go\n", "patches/0001-a.patch", "no file src/runtime/x.go"},
		{"file twice", "0001-a.patch\n\tsrc/runtime/x.go\n0002-b.patch\n\tsrc/runtime/x.go\n", "", "src/runtime/x.go is listed twice (also on line 2)"},
		{"file first", "\tsrc/runtime/x.go\n0001-a.patch\n", "", "before any patch"},
		{"outside src", "0001-a.patch\n\tmisc/x.go\n", "", "outside src/"},
		{"unclean path", "0001-a.patch\n\tsrc/runtime/../x.go\n", "", "not a clean"},
		{"patch twice", "0001-a.patch\n0001-a.patch\n", "", "listed twice"},
		{"not a patch name", "0001-a.diff\n", "", "not a patch file name"},
		{"indented by spaces", "0001-a.patch\n  src/x.go\n", "", "indented by one tab"},
		{"upstream file", "0001-a.patch\n\tsrc/runtime/proc.go\n", "patches/0001-a.patch src/runtime/proc.go", "upstream or an earlier patch already has it"},
		{"not a patch file", "0001-a.patch\n", "patches/0001-a.patch", "not a patch file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(e.repo, "patches/series", tc.series)
			for _, f := range strings.Fields(tc.files) {
				content := "Subject: a: b\n---\n"
				if tc.name == "not a patch file" {
					content = "diff --git a/x b/x\n"
				}
				if strings.HasPrefix(f, "src/") {
					content = "package runtime\n"
				}
				e.write(e.repo, f, content)
			}
			_, err := e.fork("apply")
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("apply: %v; want one line containing %q", err, tc.want)
			}
		})
	}
}

func TestBadInputs(t *testing.T) {
	t.Run("upstream version", func(t *testing.T) {
		e := newEnv(t)
		e.write(e.upstream, "VERSION", "go1.1\n")
		if _, err := e.fork("apply"); err == nil || !strings.Contains(err.Error(), "go1.1, not "+testUpstream) {
			t.Errorf("apply with a wrong upstream: %v", err)
		}
	})
	t.Run("VERSION", func(t *testing.T) {
		e := newEnv(t)
		e.write(e.repo, "VERSION", testUpstream+"\n")
		if _, err := e.fork("apply"); err == nil || !strings.Contains(err.Error(), "first line must be goX.Y.Z-SUFFIX") {
			t.Errorf("apply with an unsuffixed VERSION: %v", err)
		}
	})
	t.Run("new file outside src", func(t *testing.T) {
		e := newEnv(t)
		e.mustFork("apply")
		e.write(e.work, "misc/new.txt", "x\n")
		e.commit("misc: add a file")
		if _, err := e.fork("extract"); err == nil || !strings.Contains(err.Error(), "outside src/") {
			t.Errorf("extract of a new file outside src/: %v", err)
		}
	})
	t.Run("reserved subject", func(t *testing.T) {
		e := newEnv(t)
		e.mustFork("apply")
		e.write(e.work, "src/runtime/x.go", "package runtime\n")
		e.commit("fork: sneak a file in")
		if _, err := e.fork("extract"); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("extract of a 'fork: ' commit adding a file: %v", err)
		}
	})
	t.Run("usage", func(t *testing.T) {
		var out bytes.Buffer
		if code := cli([]string{"frobnicate"}, &out, &out); code != 2 || !strings.Contains(out.String(), "Exit codes") {
			t.Errorf("unknown verb: exit %d\n%s", code, out.String())
		}
		if code := cli([]string{"apply", "-nobuild"}, &out, &out); code != 2 {
			t.Errorf("apply -nobuild: exit %d, want 2", code)
		}
	})
}

// TestCheckBuildsEachCommit proves that check compiles each commit's own sources and
// tests: a series whose second patch plants a syntax error, fixed by the third, fails at
// commit 2 and not 3; a commit adding a test that does not compile fails too.
// It needs the real upstream toolchain.
func TestCheckBuildsEachCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("copies and builds from the real upstream GOROOT")
	}
	e := newEnv(t)
	os.Unsetenv("FORK_UPSTREAM")
	up, err := (&fork{top: "../.."}).upstream()
	if err != nil {
		t.Skip("no upstream toolchain:", err)
	}
	t.Setenv("FORK_UPSTREAM", up)
	defer func(s, c []string) { checkStdPkgs, checkCmdPkgs = s, c }(checkStdPkgs, checkCmdPkgs)
	checkStdPkgs, checkCmdPkgs = []string{"container/ring"}, []string{"cmd/internal/objabi"}
	e.mustFork("apply")
	e.write(e.work, "src/container/ring/forkcheck.go", "package ring\n\nfunc forkCheck() int { return 1 }\n")
	e.commit("container/ring: add forkCheck\n\nTests: none (the check builds it)")
	// A later patch may change upstream files only (not forkcheck.go,
	// which the first one introduces): it breaks ring.go, the next mends it.
	// (container/ring, which no package imports: a change to it recompiles
	// nothing else, and go vet compiles its tests' imports once.)
	orig := e.read(e.work, "src/container/ring/ring.go")
	e.write(e.work, "src/container/ring/ring.go", orig+"\nfunc forkBroken() int { return 1 \n")
	e.commit("container/ring: break forkCheck\n\nTests: none (the check builds it)")
	e.write(e.work, "src/container/ring/ring.go", orig+"\nfunc forkMended() int { return forkCheck() }\n")
	e.commit("container/ring: mend forkCheck\n\nTests: none (the check builds it)")
	e.write(e.work, "src/cmd/internal/objabi/forkcheck.go", "package objabi\n\nvar forkCheck = undefinedName\n")
	e.commit("cmd/internal/objabi: refer to a name that does not exist\n\nTests: none (the check builds it)")
	// A test that does not compile fails its commit although the package builds.
	e.write(e.work, "src/container/ring/forkcheck_test.go", "package ring\n\nvar _ = forkCheck(\"one argument too many\")\n")
	e.commit("container/ring: test forkCheck")
	e.mustFork("extract")
	out, err := e.fork("check")
	if err == nil || !strings.Contains(err.Error(), "3 of 6 commits do not build: 2 (container/ring: break forkCheck), 4 (cmd/internal/objabi: refer to a name that does not exist), 5 (container/ring: test forkCheck)") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	for _, want := range []string{"build  1/6", "container/ring: add forkCheck", "ok (", "syntax error", "undefined: undefinedName", "too many arguments in call to forkCheck", "build  6/6"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

func FuzzParseSeries(f *testing.F) {
	f.Add([]byte(wantSeries))
	f.Add([]byte("0001-a.patch\n\tsrc/a\n\tsrc/b\n# c\n0002-b.patch\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSeries("series", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error of more than one line: %q", err)
			}
			return
		}
		again, err := parseSeries("series", s.format())
		if err != nil {
			t.Fatalf("the formatted series does not parse: %v", err)
		}
		if string(again.format()) != string(s.format()) {
			t.Errorf("format is not stable")
		}
	})
}

// TestOnlyVERSIONNamesUpstream: the upstream release is written in VERSION
// and derived everywhere else, so moving to a new release is one edit. Code
// and scripts other than tests (whose example versions are data) must not
// name it.
func TestOnlyVERSIONNamesUpstream(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	// The release followed by something that cannot continue a version.
	re := regexp.MustCompile(regexp.QuoteMeta(testUpstream) + `([^0-9]|$)`)
	for _, name := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		base := filepath.Base(name)
		switch {
		case name == "VERSION", strings.HasSuffix(name, "_test.go"), strings.Contains(name, "/testdata/"),
			strings.HasPrefix(name, "patches/"), strings.HasPrefix(name, "doc/"), strings.HasSuffix(base, ".md"),
			strings.HasSuffix(base, ".golden"), strings.HasSuffix(base, ".svg"), strings.HasPrefix(base, "go."):
			continue
		}
		data, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if re.MatchString(line) {
				t.Errorf("%s:%d names the upstream release %s (derive it from VERSION): %s", name, i+1, testUpstream, strings.TrimSpace(line))
			}
		}
	}
}

func FuzzDiffFiles(f *testing.F) {
	f.Add([]byte("diff --git a/src/x.go b/src/x.go\n--- a/src/x.go\n+++ b/src/x.go\n"))
	f.Add([]byte("diff --git \"a/src/q\\tx.go\" \"b/src/q\\tx.go\"\n"))
	f.Add([]byte("diff --git a/src/old.go b/src/new.go\ndiff --git a/ b/\ndiff --git \"a/"))
	f.Fuzz(func(t *testing.T, diff []byte) {
		seen := map[string]bool{}
		for _, p := range diffFiles(diff) {
			if seen[p] {
				t.Errorf("diffFiles returned %q twice", p)
			}
			seen[p] = true
		}
	})
}

// check keeps README.md's concern table true to the series: a subject it names that no
// patch has, or a patch no row names, fails it.
func TestCheckConcernTable(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() {}\n")
	e.write(e.work, "src/runtime/proc_test.go", "package runtime\n")
	e.commit("runtime: make a call b")
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() { println() }\n")
	e.write(e.work, "src/runtime/print_test.go", "package runtime\n")
	e.commit("runtime: make b print a line")
	e.mustFork("extract")
	table := func(rows ...string) string {
		return "# fork\n\n| concern | patches (by subject) | design |\n| --- | --- | --- |\n" + strings.Join(rows, "\n") + "\n\nAfter the table: `not a subject`\n"
	}
	e.write(e.repo, "README.md", table("| calls | `runtime: make a call b` | - |", "| printing | `runtime: make b ...` | - |", "| docs | | - |"))
	if out := e.mustFork("check", "-nobuild"); !strings.Contains(out, "concern table names each patch") {
		t.Errorf("check output lacks the concern table's line:\n%s", out)
	}
	e.write(e.repo, "README.md", table("| calls | `runtime: make a call b`, `runtime: make c ...` | - |"))
	_, err := e.fork("check", "-nobuild")
	if !errors.Is(err, errConcernTable) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("check: %v; want one line wrapping errConcernTable", err)
	}
	for _, want := range []string{
		"`runtime: make c ...` is no patch's subject",
		`patches/0002-runtime-make-b-print-a-line.patch ("runtime: make b print a line") is in no row`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "0001") || strings.Contains(err.Error(), "not a subject") {
		t.Errorf("check error names what it should not:\n%v", err)
	}
}

func TestSubjectPattern(t *testing.T) {
	for _, tc := range []struct {
		pat, subject string
		want         bool
	}{
		{"runtime: end the frame-pointer chain in ...", "runtime: end the frame-pointer chain in darwin sigtramp", true},
		{"... with cgo on the stack", "runtime: unwind with frame pointers with cgo on the stack", true},
		{"runtime: ... profile ...", "runtime: record heap and goroutine profile stacks", true},
		{"runtime: a", "runtime: ab", false},
		{"runtime: a.b", "runtime: axb", false},
	} {
		if got := subjectPattern(tc.pat).MatchString(tc.subject); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pat, tc.subject, got, tc.want)
		}
	}
}
