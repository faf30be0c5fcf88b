package main

import (
	"flag"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/golden"
	"fpsafe.dev/misc/internal/lineageabi"
)

// TestExitStatus: the exit statuses the usage text documents, and which
// writer each message goes to.
func TestExitStatus(t *testing.T) {
	cases := []struct {
		args        []string
		code        int
		out, errOut string // substrings of stdout and stderr ("" = empty)
	}{
		{[]string{"help"}, 0, "Exit status: 0 success", ""},
		{nil, 2, "", "golineage: no command\nrun 'golineage help' for usage\n"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"stacks"}, 2, "", "stacks: need exactly one PID"},
		{[]string{"ps", "-stacks", "1"}, 2, "", "ps: -stacks needs -json"},
		{[]string{"ps", "-goid", "x", "1"}, 2, "", `"x" is not a goroutine id`},
		{[]string{"ps", "-func", "(", "1"}, 2, "", "missing closing )"},
		{[]string{"help", "frobnicate"}, 2, "", `help: unknown command "frobnicate"`},
		{[]string{"ps", "-h"}, 0, "usage: golineage ps [-json]", ""},
		{[]string{"help", "profile"}, 0, "-collector ebpf|ptrace", ""},
		{[]string{"stacks", "-bogus", "1"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"stacks", "abc"}, 2, "", "\"abc\" is not a process id\nrun 'golineage help stacks' for usage\n"},
		{[]string{"ps", "1", "2"}, 2, "", "ps: need exactly one PID"},
		{[]string{"profile", "-format", "xml", "1"}, 2, "", `-format "xml"`},
		{[]string{"profile", "-collector", "dtrace", "1"}, 2, "", `-collector "dtrace"`},
		{[]string{"profile", "-collector", "bpf", "1"}, 2, "", "the bpftrace collector was removed"},
		{[]string{"symbolize"}, 2, "", "symbolize: need exactly one EXE"},
		{[]string{"stacks", "-native", "--core", "/nonexistent", "/nonexistent"}, 1, "", "no such file"},
	}
	for _, c := range cases {
		out, errOut, code := tool(t, c.args...)
		if code != c.code {
			t.Errorf("golineage %q: exit %d, want %d (stderr %q)", c.args, code, c.code, errOut)
		}
		for _, w := range []struct{ name, got, want string }{{"stdout", out, c.out}, {"stderr", errOut, c.errOut}} {
			if w.want == "" && w.got != "" || !strings.Contains(w.got, w.want) {
				t.Errorf("golineage %q: %s %q, want it to contain %q", c.args, w.name, w.got, w.want)
			}
		}
		// A usage error is one line and a pointer to the usage, not the
		// whole text; -h prints the command's usage once.
		if code == 2 && (strings.Count(errOut, "\n") != 2 || !strings.Contains(errOut, "run 'golineage help")) {
			t.Errorf("golineage %q: bad usage: stderr %q, want one line and where the usage is", c.args, errOut)
		}
		if n := strings.Count(out, "usage:"); n > 1 {
			t.Errorf("golineage %q: usage printed %d times", c.args, n)
		}
	}
}

// usageLines is the commands' part of "golineage help", one string per
// line, each starting with a tab.
func usageLines(t *testing.T) []string {
	t.Helper()
	text, ok := strings.CutPrefix(usageText(), "usage:\n")
	block, _, ok2 := strings.Cut(text, "\n\n")
	if !ok || !ok2 {
		t.Fatalf("usage text has no usage block:\n%s", usageText())
	}
	return strings.Split(block, "\n")
}

// TestUsageDocumented: "golineage help" is testdata/usage.golden, and
// its synopsis is the package doc's usage block and the README's, so
// that the usage is written once, by the flag sets, and copies cannot
// drift (go test -update rewrites the golden file; the docs are then
// fixed by hand).
func TestUsageDocumented(t *testing.T) {
	golden.Check(t, "usage", usageText())
	lines := usageLines(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	want := "Usage:\n\n" + strings.Join(lines, "\n") + "\n\n"
	if doc := f.Doc.Text(); !strings.Contains(doc, want) {
		t.Errorf("main.go's package doc lacks the usage block; want:\n%s", want)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var md []string
	for _, l := range lines {
		md = append(md, strings.ReplaceAll(l, "\t", "    "))
	}
	if want := "\n" + strings.Join(md, "\n") + "\n"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md lacks the usage block; want:\n%s", want)
	}
}

// TestParseInterleaved: flags may follow the operands, and "--" ends the
// flags.
func TestParseInterleaved(t *testing.T) {
	cases := []struct {
		args     []string
		json     bool
		operands []string
	}{
		{[]string{"1234", "-json"}, true, []string{"1234"}},
		{[]string{"-json", "1234"}, true, []string{"1234"}},
		{[]string{"1234"}, false, []string{"1234"}},
		{[]string{"a", "-json", "b"}, true, []string{"a", "b"}},
		{[]string{"--", "-json"}, false, []string{"-json"}},
		{[]string{"a", "--", "-json", "b"}, false, []string{"a", "-json", "b"}},
	}
	for _, c := range cases {
		fl := flag.NewFlagSet("x", flag.ContinueOnError)
		j := fl.Bool("json", false, "")
		got, err := parseInterleaved(fl, c.args)
		if err != nil || *j != c.json || !slices.Equal(got, c.operands) {
			t.Errorf("parseInterleaved(%q) = %q, %v with -json=%v; want %q with -json=%v", c.args, got, err, *j, c.operands, c.json)
		}
	}
}

// TestPsColumns: a state longer than its column widens the column instead
// of pushing the columns after it out of line (issue 24).
func TestPsColumns(t *testing.T) {
	long := "a wait reason longer than the column it sits in"
	set := &goroutineSet{gs: []goroutine{
		{Goroutine: &lineageabi.Goroutine{Goid: 1, Status: lineageabi.StatusWaiting, WaitReason: long, Record: &lineageabi.Record{}}},
		{Goroutine: &lineageabi.Goroutine{Goid: 22, Status: lineageabi.StatusWaiting, WaitReason: "sleep", WaitAddr: 0xc000123456, Record: &lineageabi.Record{}}},
	}}
	var b strings.Builder
	set.writePs(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	at := strings.Index(lines[0], "FUNCTION")
	for _, l := range lines[1:] {
		if len(l) <= at || l[at:] != "?" || l[at-1] != ' ' {
			t.Errorf("columns out of line:\n%s", b.String())
			break
		}
	}
	if !strings.Contains(b.String(), long+" ") {
		t.Errorf("the long state was cut:\n%s", b.String())
	}
}
