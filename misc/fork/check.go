package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The packages check builds at every commit: the runtime's, and the toolchain's for
// commits that touch src/cmd/. Tests narrow them to keep fake series cheap.
var (
	checkStdPkgs = []string{"runtime", "runtime/pprof", "runtime/trace"}
	checkCmdPkgs = []string{"cmd/asm", "cmd/compile", "cmd/link", "cmd/go"}
)

// check verifies the rule on the fork's own files (owned.go): no patch's diff changes a new
// file of the series, and src/ holds each new file as the last commit does; and the rule on
// tests (testrule.go): a patch that changes code changes a test of it; and README.md's
// concern table against the series (concerns.go). Then it applies
// the series into a scratch repository, extracts it, compares the result with the
// repository byte for byte, and (build) builds every commit after "upstream" and
// type-checks the tests of the packages each commit touches.
func (f *fork) check(stdout io.Writer, build, keep bool) error {
	in, err := f.loadInputs()
	if err != nil {
		return err
	}
	if err := checkOwnedFiles(f.top, in.series); err != nil {
		return err
	}
	if err := checkPatchTests(f.top, in.series); err != nil {
		return err
	}
	if err := checkConcernTable(f.top, in.series); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "fork-check-")
	if err != nil {
		return err
	}
	if keep {
		f.logf("check: scratch tree kept in %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	scratch := filepath.Join(tmp, "work")
	if _, err := initHistory(scratch, in.up, in.series, f.top, in.version); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	g := &gitRepo{dir: scratch}
	if err := checkSrcMatchesApplied(g, f.top, in.series); err != nil {
		return err
	}
	out := filepath.Join(tmp, "out")
	if err := extractTo(g, out); err != nil {
		return fmt.Errorf("check: extracting the applied series: %w", err)
	}
	a, err := readSnapshot(f.top)
	if err != nil {
		return err
	}
	b, err := readSnapshot(out)
	if err != nil {
		return err
	}
	if d := differences(a, b); len(d) > 0 {
		for _, p := range d {
			cmd := exec.Command("git", "diff", "--no-index", "--no-color", "--", filepath.Join(f.top, p), filepath.Join(out, p))
			cmd.Stdout, cmd.Stderr = f.log, f.log
			cmd.Run() // exits 1 when the files differ; a missing side shows as git's error
		}
		return fmt.Errorf("check: apply then extract differs from the repository in %s%s (a patch or the series edited by hand? redo the change in goroot/ and ./fork extract)", strings.Join(first(d, 3), ", "), more(d, 3))
	}
	fmt.Fprintf(stdout, "fork: check: no patch changes a new file of the series; src/ holds what the last commit holds\n")
	fmt.Fprintf(stdout, "fork: check: each patch that changes code changes a test of it or says why not (Tests: none)\n")
	fmt.Fprintf(stdout, "fork: check: README.md's concern table names each patch, and no other\n")
	fmt.Fprintf(stdout, "fork: check: apply then extract reproduces patches/, src/ and VERSION (%d patches)\n", len(in.series))
	if !build {
		return nil
	}
	return f.checkBuilds(stdout, g, in.up)
}

// checkBuilds builds every commit after "upstream" in g's work tree with the pristine
// upstream toolchain: GOROOT is the work tree, checked out at the commit, so the go
// command compiles that commit's sources (std and cmd) with upstream's compile, asm and
// link (pkg/tool links to upstream's; pkg/include is the commit's runtime headers).
// Then go vet type-checks the packages the commit changes with their tests, so a patch
// cannot leave a test that compiles only once a later patch lands.
func (f *fork) checkBuilds(stdout io.Writer, g *gitRepo, up string) error {
	revs, err := g.run("rev-list", "--reverse", "upstream..HEAD")
	if err != nil {
		return err
	}
	commits := strings.Fields(revs)
	pkgDir := filepath.Join(g.dir, "pkg")
	if err := os.MkdirAll(filepath.Join(pkgDir, "include"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(up, "pkg", "tool"), filepath.Join(pkgDir, "tool")); err != nil {
		return err
	}
	headers, err := os.ReadDir(filepath.Join(up, "pkg", "include"))
	if err != nil {
		return err
	}
	// The files dist generates, which git ignores, as upstream ships them.
	for _, e := range excludes {
		if strings.HasPrefix(e, "/src/") && strings.HasSuffix(e, ".go") {
			if err := copyFile(filepath.Join(up, filepath.FromSlash(e)), filepath.Join(g.dir, filepath.FromSlash(e))); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	env := append(cleanEnv(), "GOROOT="+g.dir, "GOTOOLCHAIN=local", "GOFLAGS=")
	gocmd := filepath.Join(up, "bin", "go")
	var failed []string
	for i, c := range commits {
		subject, err := g.line("log", "-1", "--format=%s", c)
		if err != nil {
			return err
		}
		if _, err := g.run("checkout", "-q", "-f", "--detach", c); err != nil {
			return err
		}
		for _, h := range headers {
			data, err := os.ReadFile(filepath.Join(g.dir, "src", "runtime", h.Name()))
			if err != nil {
				return fmt.Errorf("check: commit %s lacks src/runtime/%s: %w", c[:12], h.Name(), err)
			}
			if err := os.WriteFile(filepath.Join(pkgDir, "include", h.Name()), data, 0o644); err != nil {
				return err
			}
		}
		pkgs := checkStdPkgs
		touched, err := g.run("diff-tree", "-r", "--name-only", "--no-commit-id", c+"^", c, "--", "src/cmd")
		if err != nil {
			return err
		}
		if strings.TrimSpace(touched) != "" {
			pkgs = append(append([]string(nil), pkgs...), checkCmdPkgs...)
		}
		start := time.Now()
		var buf bytes.Buffer
		cmd := exec.Command(gocmd, append([]string{"build"}, pkgs...)...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = g.dir, env, &buf, &buf
		err = cmd.Run()
		if err == nil {
			// The commit's tests must compile too: vet type-checks every
			// package the commit touches with its test files.
			var vetPkgs []string
			if vetPkgs, err = touchedPackages(g, c); err == nil && len(vetPkgs) > 0 {
				cmd := exec.Command(gocmd, append([]string{"vet"}, vetPkgs...)...)
				cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = g.dir, env, &buf, &buf
				err = cmd.Run()
			}
		}
		status := "ok"
		if err != nil {
			status = "FAILED"
			failed = append(failed, fmt.Sprintf("%d (%s)", i+1, subject))
		}
		fmt.Fprintf(stdout, "fork: check: build %2d/%d %s %-60.60s %s (%.1fs)\n", i+1, len(commits), c[:12], subject, status, time.Since(start).Seconds())
		if err != nil {
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			fmt.Fprintf(stdout, "\t%s\n", strings.Join(first(lines, 20), "\n\t"))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("check: %d of %d commits do not build: %s; fix each in goroot/ (git rebase -i upstream) and ./fork extract", len(failed), len(commits), strings.Join(failed, ", "))
	}
	fmt.Fprintf(stdout, "fork: check: every commit after upstream builds, and its tests compile (%d commits)\n", len(commits))
	return nil
}

// touchedPackages returns the import paths of the packages whose Go or assembly files
// commit c changes (testdata excluded), as go vet takes them.
func touchedPackages(g *gitRepo, c string) ([]string, error) {
	names, err := g.run("diff-tree", "-r", "--name-only", "--no-commit-id", "--diff-filter=d", c+"^", c, "--", "src")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var pkgs []string
	for _, name := range strings.Fields(names) {
		if ext := filepath.Ext(name); ext != ".go" && ext != ".s" || strings.Contains(name, "/testdata/") {
			continue
		}
		pkg := strings.TrimPrefix(filepath.ToSlash(filepath.Dir(name)), "src/")
		if !seen[pkg] {
			seen[pkg] = true
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs, nil
}
