package workflow

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// env is a scratch repository holding a copy of ./fork, and a fake upstream GOROOT.
type env struct {
	t        *testing.T
	repo     string // the fork's repository: fork, patches/, src/, VERSION
	upstream string
	work     string // the work tree, repo/goroot
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed:", err)
	}
	dir := t.TempDir()
	e := &env{t: t, repo: filepath.Join(dir, "repo"), upstream: filepath.Join(dir, "up")}
	e.work = filepath.Join(e.repo, "goroot")
	script, err := os.ReadFile("../../fork")
	if err != nil {
		t.Fatal(err)
	}
	e.write(e.repo, "fork", string(script))
	if err := os.Chmod(filepath.Join(e.repo, "fork"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(e.repo, "VERSION", "go1.27.3-test1\n")
	e.write(e.upstream, "VERSION", "go1.27.3\ntime 2026-10-19T22:20:36Z\n")
	e.write(e.upstream, "go.env", "GOTOOLCHAIN=auto\n")
	e.write(e.upstream, "src/runtime/proc.go", "package runtime\n\nfunc a() {}\n\nfunc b() {}\n")
	e.write(e.upstream, "src/runtime/asm_amd64.s", "TEXT ·a(SB),0,$0\n\tRET\n")
	e.write(e.upstream, "bin/go", "prebuilt binary, not source\n")
	e.write(e.upstream, "pkg/tool/x", "prebuilt\n")
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

// fork runs the tool and returns its combined output and whether it succeeded.
func (e *env) fork(args ...string) (string, bool) {
	e.t.Helper()
	cmd := exec.Command(filepath.Join(e.repo, "fork"), args...)
	cmd.Env = append(os.Environ(), "FORK_UPSTREAM="+e.upstream, "FORK_WORK=")
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func (e *env) mustFork(args ...string) string {
	e.t.Helper()
	out, ok := e.fork(args...)
	if !ok {
		e.t.Fatalf("fork %s failed:\n%s", strings.Join(args, " "), out)
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

// snapshot returns every file under the repository's patches/ and src/, and VERSION.
func (e *env) snapshot() map[string]string {
	e.t.Helper()
	files := map[string]string{"VERSION": e.read(e.repo, "VERSION")}
	for _, d := range []string{"patches", "src"} {
		filepath.Walk(filepath.Join(e.repo, d), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				rel, _ := filepath.Rel(e.repo, p)
				b, _ := os.ReadFile(p)
				files[rel] = string(b)
			}
			return nil
		})
	}
	return files
}

func names(m map[string]string) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// edit makes the two kinds of change a developer makes in the work tree, as three commits:
// an upstream file changed, a new file added, and one commit doing both.
func (e *env) edit() {
	e.write(e.work, "src/runtime/proc.go", "package runtime\n\nfunc a() { b() }\n\nfunc b() {}\n")
	e.git("commit", "-qam", "runtime: make a call b\n\nBecause the test says so.")
	e.write(e.work, "src/runtime/lineage.go", "package runtime\n\nfunc lineage() {}\n")
	e.git("add", "-A")
	e.git("commit", "-qm", "runtime: add lineage.go")
	e.write(e.work, "src/runtime/asm_amd64.s", "TEXT ·a(SB),0,$0\n\tMOVQ $0, BP\n\tRET\n")
	e.write(e.work, "src/runtime/lineage_test.go", "package runtime\n")
	e.git("add", "-A")
	e.git("commit", "-qm", "runtime: clear BP in a, with a test")
}

func TestRouting(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	if _, err := os.Stat(filepath.Join(e.work, "bin")); err == nil {
		t.Errorf("apply copied upstream's prebuilt bin/ into the work tree")
	}
	if got := e.read(e.work, "VERSION"); got != "go1.27.3-test1\n" {
		t.Errorf("work tree VERSION = %q, want the fork's", got)
	}
	e.edit()
	e.mustFork("extract")
	snap := e.snapshot()
	want := []string{
		"VERSION",
		"patches/0001-runtime-make-a-call-b.patch",
		"patches/0002-runtime-clear-bp-in-a-with-a-test.patch",
		"src/runtime/lineage.go",
		"src/runtime/lineage_test.go",
	}
	if got := names(snap); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("extracted files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p1 := snap["patches/0001-runtime-make-a-call-b.patch"]
	if !strings.HasPrefix(p1, "Subject: runtime: make a call b\n\nBecause the test says so.\n---\n") {
		t.Errorf("patch 1 does not start with its message:\n%s", p1)
	}
	p2 := snap["patches/0002-runtime-clear-bp-in-a-with-a-test.patch"]
	if strings.Contains(p2, "lineage_test.go") {
		t.Errorf("a new file went into a patch instead of src/:\n%s", p2)
	}
	for name, p := range map[string]string{"1": p1, "2": p2} {
		for _, bad := range []string{"\nindex ", "\nFrom ", "\nDate: "} {
			if strings.Contains(p, bad) {
				t.Errorf("patch %s carries a header that changes between extractions (%q)", name, bad)
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
	if second := e.snapshot(); !equal(first, second) {
		t.Fatalf("a second extraction differs from the first")
	}
	out := e.mustFork("check")
	if !strings.Contains(out, "check ok") {
		t.Fatalf("check did not report success:\n%s", out)
	}
	// A fresh layout from the extracted series extracts to the same bytes.
	if err := os.RemoveAll(e.work); err != nil {
		t.Fatal(err)
	}
	e.mustFork("apply")
	e.mustFork("extract")
	if third := e.snapshot(); !equal(first, third) {
		t.Fatalf("apply then extract changed the series")
	}
	if got := e.read(e.work, "src/runtime/proc.go"); !strings.Contains(got, "b() }") {
		t.Errorf("re-applied work tree lacks patch 1: %q", got)
	}
}

func TestCheckDetectsHandEditedPatch(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.edit()
	e.mustFork("extract")
	p := filepath.Join(e.repo, "patches/0001-runtime-make-a-call-b.patch")
	b, _ := os.ReadFile(p)
	// Still applies, but is not what extraction writes (a hand-edited message).
	os.WriteFile(p, bytes.Replace(b, []byte("Because the test says so.\n"), []byte("Because the test says so.  \n\n\n"), 1), 0o644)
	if out, ok := e.fork("check"); ok {
		t.Fatalf("check passed on a series that does not round-trip:\n%s", out)
	}
}

func TestRefusesDirtyWorkTree(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.write(e.work, "src/runtime/proc.go", "package runtime // edited, not committed\n")
	out, ok := e.fork("apply")
	if ok {
		t.Fatalf("apply replaced a work tree with uncommitted edits")
	}
	if !strings.Contains(out, "uncommitted edits") || !strings.Contains(out, "./fork extract") {
		t.Errorf("refusal does not say what is wrong and how to save the work:\n%s", out)
	}
	if got := e.read(e.work, "src/runtime/proc.go"); !strings.Contains(got, "edited") {
		t.Errorf("the edit was lost")
	}
	if _, ok := e.fork("extract"); ok {
		t.Errorf("extract ran with uncommitted edits")
	}
}

func TestRefusesUnextractedCommits(t *testing.T) {
	e := newEnv(t)
	e.mustFork("apply")
	e.edit()
	out, ok := e.fork("apply")
	if ok {
		t.Fatalf("apply replaced a work tree holding commits not extracted")
	}
	if !strings.Contains(out, "not extracted") {
		t.Errorf("refusal does not say the commits are not extracted:\n%s", out)
	}
	e.mustFork("extract")
	// Once extracted, the work tree already holds the inputs: nothing to lay out again.
	if _, ok := e.fork("_needs_apply"); ok {
		t.Errorf("after extract, the work tree is reported stale")
	}
	e.mustFork("apply")
}

func TestNeedsApplyTracksInputs(t *testing.T) {
	e := newEnv(t)
	if _, ok := e.fork("_needs_apply"); !ok {
		t.Fatalf("no work tree, but _needs_apply says none is needed")
	}
	e.mustFork("apply")
	if _, ok := e.fork("_needs_apply"); ok {
		t.Fatalf("just applied, but _needs_apply says the work tree is stale")
	}
	e.write(e.repo, "src/runtime/new.go", "package runtime\n")
	if _, ok := e.fork("_needs_apply"); !ok {
		t.Fatalf("src/ changed, but _needs_apply says the work tree is current")
	}
}

func TestBadInputs(t *testing.T) {
	t.Run("upstream version", func(t *testing.T) {
		e := newEnv(t)
		e.write(e.upstream, "VERSION", "go1.26.8\n")
		out, ok := e.fork("apply")
		if ok || !strings.Contains(out, "go1.26.8, not go1.27.3") {
			t.Errorf("apply with a wrong upstream: ok=%v\n%s", ok, out)
		}
	})
	t.Run("patch does not apply", func(t *testing.T) {
		e := newEnv(t)
		e.write(e.repo, "patches/0001-x-y.patch", "Subject: x: y\n---\ndiff --git a/go.env b/go.env\n--- a/go.env\n+++ b/go.env\n@@ -1 +1 @@\n-NOT THERE\n+x\n")
		out, ok := e.fork("apply")
		if ok || !strings.Contains(out, "0001-x-y.patch does not apply") {
			t.Errorf("apply with a broken patch: ok=%v\n%s", ok, out)
		}
	})
	t.Run("upstream file in src", func(t *testing.T) {
		e := newEnv(t)
		e.write(e.repo, "src/runtime/proc.go", "package runtime\n")
		out, ok := e.fork("apply")
		if ok || !strings.Contains(out, "is an upstream file") {
			t.Errorf("apply with an upstream file in src/: ok=%v\n%s", ok, out)
		}
	})
	t.Run("VERSION", func(t *testing.T) {
		e := newEnv(t)
		e.write(e.repo, "VERSION", "go1.27.3\n")
		out, ok := e.fork("apply")
		if ok || !strings.Contains(out, "first line must be go1.27.3-SUFFIX") {
			t.Errorf("apply with an unsuffixed VERSION: ok=%v\n%s", ok, out)
		}
	})
	t.Run("new file outside src", func(t *testing.T) {
		e := newEnv(t)
		e.mustFork("apply")
		e.write(e.work, "misc/new.txt", "x\n")
		e.git("add", "-A")
		e.git("commit", "-qm", "misc: add a file")
		out, ok := e.fork("extract")
		if ok || !strings.Contains(out, "outside src/") {
			t.Errorf("extract of a new file outside src/: ok=%v\n%s", ok, out)
		}
	})
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
