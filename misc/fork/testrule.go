package main

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// The rule on tests: each patch carries the tests of its own concern. A patch that changes
// or adds code (non-test Go, C or assembly under src/) also adds or changes a test of a
// package whose code it changes: a _test.go file in that package's directory, or a file
// under its testdata/. A patch that has none says why in its message, on a line of its
// own: "Tests: none (reason)". So a reviewer reads a change with its test, and a bisect
// that lands on a commit runs the tests of what that commit changes.
var errNoTest = errors.New("a patch changes code without a test of it")

// testsNone is the line by which a patch's message says why it brings no test.
var testsNone = regexp.MustCompile(`(?m)^Tests: none \([^\s)]`)

// checkPatchTests reports the patches that change code in some packages but add or change
// no test of any of them, and do not say why.
func checkPatchTests(top string, s series) error {
	var bad []string
	for _, p := range s {
		msg, diff, err := readPatchFile(top, p.name)
		if err != nil {
			return err
		}
		if testsNone.MatchString(msg) {
			continue
		}
		code, tested := map[string]bool{}, map[string]bool{}
		var files, pkgs []string
		for _, f := range append(diffFiles(diff), p.files...) {
			pkg, kind := classifySource(f)
			switch kind {
			case sourceCode:
				files = append(files, f)
				if !code[pkg] {
					code[pkg] = true
					pkgs = append(pkgs, pkg)
				}
			case sourceTest:
				tested[pkg] = true
			}
		}
		ok := len(pkgs) == 0
		for _, pkg := range pkgs {
			ok = ok || tested[pkg]
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("patches/%s changes %s%s but no test of %s", p.name, files[0], more(files, 1), strings.Join(pkgs, ", ")))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("check: %w: %s%s; add the test to the patch (git rebase -i upstream, edit) or say why there is none on a line \"Tests: none (reason)\" of its message, then ./fork extract", errNoTest, strings.Join(first(bad, 3), "; "), more(bad, 3))
	}
	return nil
}

type sourceKind int

const (
	sourceOther sourceKind = iota
	sourceCode             // non-test Go, C or assembly
	sourceTest             // a _test.go file, or a file under a testdata/ directory
)

// classifySource returns the package directory (GOROOT-relative, without "src/") of a
// path a patch changes, and whether the path is code, a test or neither (a file outside
// src/, documentation).
func classifySource(name string) (pkg string, kind sourceKind) {
	rest, ok := strings.CutPrefix(name, "src/")
	if !ok {
		return "", sourceOther
	}
	if i := strings.Index("/"+rest, "/testdata/"); i >= 0 {
		return strings.TrimSuffix(rest[:i], "/"), sourceTest
	}
	pkg = path.Dir(rest)
	switch {
	case strings.HasSuffix(rest, "_test.go"):
		return pkg, sourceTest
	case strings.HasSuffix(rest, ".go"), strings.HasSuffix(rest, ".c"), strings.HasSuffix(rest, ".h"),
		strings.HasSuffix(rest, ".s"), strings.HasSuffix(rest, ".S"):
		return pkg, sourceCode
	}
	return pkg, sourceOther
}
