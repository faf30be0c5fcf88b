package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
		{"skip", []string{"-allow-skip", "-ci", "testdata/skip"}, 1, "allbash: -allow-skip is ignored under CI: a skip counts as failed (all.bash installs the tools)\n"},
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
		tc.want += fmt.Sprintf("note\ttools\t0\tfound 1 of %d commands\n", strings.Count(tc.list, "pkg-"))
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
	// With install's list: the note names what it installed.
	os.WriteFile(list, []byte("present-tool pkg-a\n"), 0o666)
	state := filepath.Join(dir, "installed")
	for _, tc := range []struct{ state, want string }{
		{"pkg-a\n", "all.bash installed pkg-a"},
		{"", "all.bash installed nothing"},
	} {
		os.WriteFile(state, []byte(tc.state), 0o666)
		out := filepath.Join(dir, "out")
		os.Remove(out)
		var stdout, stderr bytes.Buffer
		if code := cli([]string{"tools", "-o", out, "-installed", state, list}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit status %d: %s", code, stderr.String())
		}
		got, _ := os.ReadFile(out)
		if want := "note\ttools\t0\tfound 1 of 1 commands; " + tc.want + "\n"; !strings.HasSuffix(string(got), want) {
			t.Errorf("records %q, want them to end %q", got, want)
		}
	}
	os.WriteFile(list, []byte("one two three\n"), 0o666)
	var stdout, stderr bytes.Buffer
	if code := cli([]string{"tools", "-o", filepath.Join(dir, "out"), list}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "want COMMAND PACKAGE") {
		t.Errorf("malformed tool list: exit %d, stderr %q", code, stderr.String())
	}
}

// TestNoteInSummary: a note record counts nothing and ends its step's line
// in the table.
func TestNoteInSummary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "steps"), []byte("tools\tresults\t0\t0\n"), 0o666)
	os.WriteFile(filepath.Join(dir, "tools.records"), []byte("pass\ttools\t0\tgit gcc\nnote\ttools\t0\tfound 2 of 2 commands\n"), 0o666)
	var stdout, stderr bytes.Buffer
	if code := cli([]string{dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "       1       0        0  found 2 of 2 commands\n") ||
		!strings.HasSuffix(stdout.String(), "\n1 passed, 0 failed\n") {
		t.Errorf("summary:\n%s", stdout.String())
	}
}

// fakeInstaller records the commands it runs; apt-get install makes the
// tools' commands exist in bin.
type fakeInstaller struct {
	t       *testing.T
	bin     string
	ran     []string
	sudoOK  bool
	failAll bool
}

func (f *fakeInstaller) installer(euid int, haveApt bool) installer {
	return installer{
		euid: euid,
		lookPath: func(name string) (string, error) {
			if name == "apt-get" && !haveApt {
				return "", fmt.Errorf("not found")
			}
			return "/usr/bin/" + name, nil
		},
		run: func(w io.Writer, name string, args ...string) error {
			f.ran = append(f.ran, strings.Join(append([]string{name}, args...), " "))
			if name == "sudo" && len(args) == 2 && args[1] == "true" && !f.sudoOK {
				return fmt.Errorf("a password is required")
			}
			if f.failAll {
				return fmt.Errorf("exit status 100")
			}
			if i := slices.Index(args, "install"); i >= 0 {
				for _, cmd := range []string{"absent-a", "absent-b"} {
					if err := os.WriteFile(filepath.Join(f.bin, cmd), []byte("#!/bin/sh\n"), 0o755); err != nil {
						f.t.Fatal(err)
					}
				}
			}
			return nil
		},
	}
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "tools")
	os.WriteFile(list, []byte("present-tool pkg-p\nabsent-a pkg-x\nabsent-b pkg-x\n"), 0o666)
	for _, tc := range []struct {
		name    string
		euid    int
		haveApt bool
		sudoOK  bool
		failAll bool
		ran     []string // commands run, in order
		err     string   // "" for success
	}{
		{name: "root", euid: 0, haveApt: true,
			ran: []string{"apt-get update -qq", "apt-get install -y -qq pkg-x"}},
		{name: "sudo", euid: 1000, haveApt: true, sudoOK: true,
			ran: []string{"sudo -n true", "sudo -n apt-get update -qq", "sudo -n apt-get install -y -qq pkg-x"}},
		{name: "no-sudo", euid: 1000, haveApt: true,
			ran: []string{"sudo -n true"}, err: "not installed: absent-a absent-b; install them with: sudo apt-get install -y pkg-x"},
		{name: "no-apt", euid: 0, err: "install them with: sudo apt-get install -y pkg-x"},
		{name: "apt-fails", euid: 0, haveApt: true, failAll: true,
			ran: []string{"apt-get update -qq", "apt-get install -y -qq pkg-x"}, err: "still not installed: absent-a absent-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			os.WriteFile(filepath.Join(bin, "present-tool"), []byte("#!/bin/sh\n"), 0o755)
			t.Setenv("PATH", bin)
			f := &fakeInstaller{t: t, bin: bin, sudoOK: tc.sudoOK, failAll: tc.failAll}
			state := filepath.Join(t.TempDir(), "installed")
			var stdout, logw bytes.Buffer
			err := f.installer(tc.euid, tc.haveApt).install(list, state, &stdout, &logw)
			if !slices.Equal(f.ran, tc.ran) {
				t.Errorf("ran %q, want %q", f.ran, tc.ran)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("install: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("install: error %v, want one containing %q", err, tc.err)
			case tc.err != "":
				return
			}
			if want := "all.bash: installing pkg-x (for absent-a absent-b)\n"; stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
			if got, _ := os.ReadFile(state); string(got) != "pkg-x\n" {
				t.Errorf("installed list %q, want %q", got, "pkg-x\n")
			}
			// Everything is there now: nothing runs, nothing is installed.
			f.ran = nil
			stdout.Reset()
			if err := f.installer(tc.euid, tc.haveApt).install(list, state, &stdout, &logw); err != nil || f.ran != nil {
				t.Errorf("second install: %v, ran %q", err, f.ran)
			}
			if got, _ := os.ReadFile(state); len(got) != 0 {
				t.Errorf("second install: installed list %q, want empty", got)
			}
		})
	}
}

// TestInstallCLI: where nothing can install (no apt-get on the PATH),
// install names the command that would and exits 1, or goes on with
// -allow-skip outside CI.
func TestInstallCLI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	list := filepath.Join(t.TempDir(), "tools")
	os.WriteFile(list, []byte("absent-tool pkg-b\n"), 0o666)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, 1, "", "allbash: not installed: absent-tool; install them with: sudo apt-get install -y pkg-b"},
		{[]string{"-allow-skip", "-ci"}, 1, "", "install them with: sudo apt-get install -y pkg-b"},
		{[]string{"-allow-skip"}, 0, "going on without absent-tool", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := cli(append(append([]string{"install"}, tc.args...), list), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) ||
			(tc.stderr == "" && stderr.Len() > 0) || strings.Count(stderr.String(), "\n") > 1 {
			t.Errorf("install %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}
