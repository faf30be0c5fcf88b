package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fakeScript imitates a program run under GODEBUG=fpunwindcheck=2, so the
// runner can be tested without the runtime side. It is a shell script, not a
// Go program: a Go binary built by the fork has a runtime that honours
// GODEBUG=fpunwindcheck=2 and prints its own real report at exit (and on a
// panic), which would mix with the fake lines. The mode is FPCHECK_FAKE.
const fakeScript = `#!/bin/sh
echo "fake: GODEBUG=$GODEBUG"
case "$FPCHECK_FAKE" in
clean)
	printf '%s\n' \
		'fpunwindcheck: site=heap checked=1000 mismatches=0' \
		'fpunwindcheck: site=trace checked=234 mismatches=0' \
		'fpunwindcheck: checked=1234 mismatches=0' >&2
	;;
mismatch)
	printf '%s\n' \
		'fpunwindcheck: mismatch site=block goid=7 fp=[0x401000,0x401100] slow=[0x401000,0x401200,0x401300]' \
		'fpunwindcheck: site=block checked=10 mismatches=1' \
		'fpunwindcheck: checked=10 mismatches=1' >&2
	;;
crash)
	printf '%s\n' \
		'fpunwindcheck: site=heap checked=5 mismatches=0' \
		'panic: boom' >&2
	exit 2
	;;
silent)
	;;
inconsistent)
	printf '%s\n' \
		'fpunwindcheck: site=heap checked=5 mismatches=0' \
		'fpunwindcheck: checked=6 mismatches=0' >&2
	;;
hang)
	# exec, so the SIGQUIT and SIGKILL of the timeout reach the process
	# holding the stderr pipe.
	exec sleep 3600
	;;
fail)
	printf '%s\n' 'fpunwindcheck: checked=3 mismatches=0' >&2
	exit 3
	;;
*)
	echo "fake: unknown mode $FPCHECK_FAKE" >&2
	exit 99
	;;
esac
exit 0
`

func TestRunFake(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skipf("the fake program is a shell script: %v", err)
	}
	fake := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(fake, []byte(fakeScript), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, timeout string
		want          int
		out           []string
	}{
		{"clean", "", 0, []string{"1234 unwinds cross-checked, 0 mismatches", "heap", "trace"}},
		{"mismatch", "", 1, []string{"mismatch site=block goid=7: frame 1", "frame-pointer unwind has 0x401100", "gentraceback has 0x401200"}},
		{"crash", "", exitFailure, []string{"died before printing the fpunwindcheck total (exit status 2)"}},
		{"silent", "", exitFailure, []string{"printed no fpunwindcheck lines"}},
		{"inconsistent", "", exitFailure, []string{"disagree with the total"}},
		{"fail", "", exitFailure, []string{"failed (exit status 3) after a clean report"}},
		{"hang", "1s", exitFailure, []string{"timed out after 1s"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			args := []string{"run"}
			if tc.timeout != "" {
				args = append(args, "-timeout", tc.timeout)
			}
			args = append(args, "--", fake)
			t.Setenv("FPCHECK_FAKE", tc.mode)
			t.Setenv("GODEBUG", "foo=1")
			code, stdout, stderr := fpcheck(t, args...)
			all := stdout + stderr
			if code != tc.want {
				t.Errorf("exit %d, want %d\n%s", code, tc.want, all)
			}
			for _, w := range tc.out {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if !strings.Contains(stdout, "fake: GODEBUG=foo=1,fpunwindcheck=2") {
				t.Errorf("GODEBUG not appended:\n%s", stdout)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		out  string
	}{
		{[]string{"run"}, exitUsage, "usage: fpcheck run [-timeout D] [-q]"},
		{[]string{"run", "-bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"perf"}, exitUsage, "fpcheck perf [-json] -i FILE"},
		{[]string{"perf", "-i", "x", "prog"}, exitUsage, "-i FILE takes no command"},
		{[]string{"binary"}, exitUsage, "-json"},
		{[]string{"-h"}, exitUsage, "Exit status: 0 clean, 1 findings, 2 usage error, 3 failure"},
		{[]string{"run", "--", "/nonexistent/prog"}, exitFailure, "fpcheck: run: exec: \"/nonexistent/prog\""},
		{[]string{"perf", "-i", "/nonexistent/script"}, exitFailure, "no such file"},
	} {
		code, stdout, stderr := fpcheck(t, tc.args...)
		if code != tc.want || !strings.Contains(stderr, tc.out) || stdout != "" {
			t.Errorf("fpcheck %v: exit %d, want %d and %q on stderr, nothing on stdout\n%s%s", tc.args, code, tc.want, tc.out, stdout, stderr)
		}
	}
}

// TestRunUpstream: a binary from a runtime without the setting is named as such.
func TestRunUpstream(t *testing.T) {
	up := upstreamGo(t)
	bin := build(t, up, "./testdata/progs/hello", "hello", nil)
	code, stdout, stderr := fpcheck(t, "run", "--", bin)
	if code != exitFailure || !strings.Contains(stderr, "lacks GODEBUG=fpunwindcheck") {
		t.Fatalf("exit %d, want 3 and a message that the runtime lacks the setting\n%s%s", code, stdout, stderr)
	}
}

// TestRunUnlinked: a fork-built program that reads no profile or trace
// links no unwind to check, and run says so instead of blaming its exit.
func TestRunUnlinked(t *testing.T) {
	bin := build(t, goTool(), "./testdata/progs/hello", "hello", nil)
	if st, _ := runtimeFeature(bin); st == featureAbsent {
		t.Skipf("the runtime of %s (built by %s) lacks GODEBUG=fpunwindcheck", bin, goTool())
	} else if st != featureUnlinked {
		t.Fatalf("runtimeFeature(%s) = %v, want featureUnlinked: the fork links fpunwindcheck into a program that reads no profile", bin, st)
	}
	code, stdout, stderr := fpcheck(t, "run", "--", bin)
	if code != exitFailure || !strings.Contains(stderr, "reads no profile or trace") {
		t.Fatalf("exit %d, want 3 and a message that the program reads no profile or trace\n%s%s", code, stdout, stderr)
	}
}

var totalRE = regexp.MustCompile(`(\d+) unwinds cross-checked, (\d+) mismatches`)

// TestRunStress runs the stress corpus under fpcheck run. It needs the fork's
// runtime side (GODEBUG=fpunwindcheck); the check is whether the built binary
// knows the setting.
func TestRunStress(t *testing.T) {
	haveCgo(t)
	bin := build(t, goTool(), "./testdata/stress", "stress", nil)
	if st, _ := runtimeFeature(bin); st != featurePresent {
		t.Skipf("the runtime of %s (built by %s) lacks GODEBUG=fpunwindcheck: the fork's runtime side is not in this toolchain", bin, goTool())
	}
	d := "3s"
	if testing.Short() {
		d = "1s"
	}
	code, stdout, stderr := fpcheck(t, "run", "-q", "-timeout", "3m", "--", bin, "-d", d)
	t.Logf("fpcheck run:\n%s", stdout)
	if code != 0 {
		t.Fatalf("fpcheck run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := totalRE.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no total in output:\n%s", stdout)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if n == 0 {
		t.Fatalf("no unwinds were cross-checked")
	}
	fmt.Printf("fpcheck run over the stress corpus: %d unwinds cross-checked, %s mismatches\n", n, m[2])
}
