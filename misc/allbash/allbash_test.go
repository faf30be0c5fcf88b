package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/golden"
)

// TestGolden runs the summary over each log directory in testdata and
// compares the output and exit status with testdata/NAME.golden.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
		stderr string
	}{
		{"pass", []string{"testdata/pass"}, 0, ""},
		{"fail", []string{"testdata/fail"}, 1, ""},
		{"skip", []string{"testdata/skip"}, 1, ""},
		{"skip-allowed", []string{"-allow-skip", "testdata/skip"}, 0, ""},
		{"skip", []string{"-allow-skip", "-ci", "testdata/skip"}, 1, "allbash: -allow-skip is ignored under CI: a skip counts as failed (.ci/run installs the tools)\n"},
		{"repeat", []string{"testdata/repeat"}, 1, ""},
		{"truncated", []string{"testdata/truncated"}, 1, ""},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if stderr.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.stderr)
			}
			golden.Check(t, tc.golden, stdout.String())
		})
	}
}

// TestCounts checks the counting rules on the golden inputs directly, so a
// wrong golden file cannot hide them.
func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		dir            string
		allowSkip      bool
		passed, failed int
	}{
		// make (exit), 2 packages (q has no test files), 1 record.
		{"testdata/pass", false, 4, 0},
		// upstream: a build failure, a failed test, a binary that exited 3,
		// a package with four failed subtests;
		// own: 1 package passed but go test exited 1; stress: 1 record;
		// bench: exit 1; empty: no results; badrec: a malformed record.
		{"testdata/fail", false, 1, 9},
		{"testdata/skip", false, 0, 2},
		{"testdata/skip", true, 0, 0},
		// One package run with -count 3: counted once; and one record.
		{"testdata/repeat", false, 1, 1},
		// A stream cut before the package's result, with go test exiting 0.
		{"testdata/truncated", false, 0, 1},
	} {
		steps, err := readSteps(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		s := summarize(steps, tc.allowSkip)
		if s.passed != tc.passed || s.failed != tc.failed {
			t.Errorf("%s allowSkip=%v: %d passed, %d failed; want %d, %d", tc.dir, tc.allowSkip, s.passed, s.failed, tc.passed, tc.failed)
		}
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "steps"), []byte("make\texit\tzero\t1\n"), 0o666)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "want one LOGDIR"},
		{[]string{"-nosuch", "x"}, "flag provided but not defined"},
		{[]string{filepath.Join(dir, "nosuch")}, "reading the step list"},
		{[]string{dir}, "invalid syntax"},
		{[]string{"tools", "x"}, "tools wants -o RECORDS"},
	} {
		var stdout, stderr bytes.Buffer
		if code := cli(tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit status %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "allbash:") != 1 {
			t.Errorf("%q: stderr %q, want one line containing %q", tc.args, stderr.String(), tc.want)
		}
	}
}

func TestTools(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "present-tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	dir := t.TempDir()
	list := filepath.Join(dir, "tools")
	for _, tc := range []struct{ list, want string }{
		{"# comment\npresent-tool pkg-a\n", "pass\ttools\t0\tpresent-tool\n"},
		{"present-tool pkg-a\nabsent-tool pkg-b\n", "skip\ttools\t0\tnot installed: absent-tool (package pkg-b)\n"},
	} {
		os.WriteFile(list, []byte(tc.list), 0o666)
		out := filepath.Join(dir, "out")
		os.Remove(out)
		var stdout, stderr bytes.Buffer
		if code := cli([]string{"tools", "-o", out, list}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit status %d: %s", code, stderr.String())
		}
		got, _ := os.ReadFile(out)
		if string(got) != tc.want {
			t.Errorf("record %q, want %q", got, tc.want)
		}
	}
	os.WriteFile(list, []byte("one two three\n"), 0o666)
	var stdout, stderr bytes.Buffer
	if code := cli([]string{"tools", "-o", filepath.Join(dir, "out"), list}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "want COMMAND PACKAGE") {
		t.Errorf("malformed tool list: exit %d, stderr %q", code, stderr.String())
	}
}
