package main

import (
	"strings"
	"testing"
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
		{nil, 2, "", "golineage: no command\nusage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"stacks"}, 2, "", "need exactly one PID"},
		{[]string{"stacks", "-bogus", "1"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"stacks", "abc"}, 2, "", `"abc" is not a process id`},
		{[]string{"profile", "-format", "xml", "1"}, 2, "", `-format "xml"`},
		{[]string{"profile", "-collector", "dtrace", "1"}, 2, "", `-collector "dtrace"`},
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
		if code == 2 && !strings.Contains(errOut, "usage:") {
			t.Errorf("golineage %q: bad usage without the usage text", c.args)
		}
	}
}
