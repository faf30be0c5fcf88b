// Allbash prints the summary that ends ../../all.bash: which steps passed,
// what failed and why, and the line "N passed, N failed".
//
// Usage:
//
//	allbash [-allow-skip] [-ci] LOGDIR
//	allbash tools -o RECORDS [-installed LIST] TOOLSFILE
//	allbash install [-allow-skip] [-ci] [-state LIST] [-log LOG] TOOLSFILE
//
// all.bash runs each step with its output in LOGDIR and appends one line to
// LOGDIR/steps: NAME, KIND, exit status and seconds, separated by tabs. KIND
// says where the step's results are:
//
//	results  LOGDIR/NAME.json holds the step's `go test -json` streams, and
//	         LOGDIR/NAME.records the result records it wrote (either or both)
//	exit     the step's exit status is its only result
//
// LOGDIR/NAME.log holds the step's other output (standard error, text); the
// summary quotes its last lines when a step fails without saying why.
//
// A result record is one line, RESULT<TAB>NAME<TAB>SECONDS<TAB>NOTE, with
// RESULT pass, fail or skip; a record with RESULT note counts nothing, and
// its NOTE ends the step's line in the summary table. Steps that are not go test runs append records
// to the file named by $ALLBASH_RECORDS; a test binary run by a script
// (under qemu-user, say) goes through `go tool test2json` into $ALLBASH_JSON.
//
// Counting. A go test step counts packages, not tests: each package that
// passed counts one passed, each that failed (a failed test, a failed build,
// a test binary that exited non-zero, a panic, a timeout) one failed, and a
// package without test files nothing. Test counts change with -short and
// -run and with subtests; package counts do not. A records step counts each
// record; an exit step counts one. A skip record, such as a tool the step
// needs that is not installed, counts as failed: CI installs every tool
// (.ci/run, from .ci/tools). -allow-skip lists skips without counting them,
// for a developer's machine; -ci overrides it. Every step also fails
// once if it exited non-zero with nothing counted as failed or skipped, and
// if it exited zero with nothing counted at all.
//
// tools looks up each command listed in TOOLSFILE (lines "COMMAND PACKAGE",
// # comments) on the PATH and appends one record for them all to RECORDS:
// pass, or skip naming what is missing and the package that provides it;
// then a note record: how many commands it found and which packages
// install put in LIST.
//
// install, which all.bash runs before its first step, installs the
// packages of the commands TOOLSFILE lists that the PATH lacks with
// apt-get (update, then install -y), as root or through sudo without a
// password, saying which; apt-get's output goes to LOG (default: standard
// error), the packages it installed to LIST. Where it cannot (no apt-get,
// not root, no password-less sudo) it fails with the one command that
// would install them, unless -allow-skip (ignored with -ci) lets all.bash
// go on without them.
//
// Exit status: 0 when nothing failed, 1 when something failed (for
// install: tools not installed), 2 for bad usage or a log directory that
// cannot be read.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `usage:
	allbash [-allow-skip] [-ci] LOGDIR
	allbash tools -o RECORDS [-installed LIST] TOOLSFILE
	allbash install [-allow-skip] [-ci] [-state LIST] [-log LOG] TOOLSFILE

LOGDIR/steps lists the steps all.bash ran (NAME KIND EXIT SECONDS, tab-separated);
KIND is results (NAME.json: go test -json; NAME.records: RESULT NAME SECONDS NOTE,
tab-separated) or exit. Prints the failures and a summary ending in "N passed, N failed".

  -allow-skip  list skipped steps (a tool not installed) without counting them as failed;
               ignored with -ci
  -ci          running under CI
  -o RECORDS   tools: the records file to append to
  -installed LIST
               tools: the packages install installed (its -state file)
  -state LIST  install: write the packages it installed to LIST
  -log LOG     install: apt-get's output (default: standard error)

install installs, with apt-get as root or through password-less sudo, the
packages of the TOOLSFILE commands that the PATH lacks; without the right to,
it exits 1 naming the command that would (with -allow-skip and not -ci, 0).

Exit status: 0 nothing failed, 1 something failed (install: not installed),
2 bad usage or unreadable logs.
`

// errFailed is returned when the summary counted a failure.
var errFailed = errors.New("some steps failed")

// installFailed is install's failure: cli prints it and exits 1.
type installFailed struct{ err error }

func (e installFailed) Error() string { return e.err.Error() }
func (e installFailed) Unwrap() error { return e.err }

// usageError is bad usage: cli prints the usage text and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

func cli(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errFailed):
		return 1
	case errors.As(err, new(installFailed)):
		fmt.Fprintf(stderr, "allbash: %v\n", err)
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "allbash: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "allbash: %v\n", err)
		return 2
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "tools" {
		return runTools(args[1:])
	}
	if len(args) > 0 && args[0] == "install" {
		return runInstall(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("allbash", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	allowSkip := fs.Bool("allow-skip", false, "")
	ci := fs.Bool("ci", false, "")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageError{"want one LOGDIR"}
	}
	if *allowSkip && *ci {
		fmt.Fprintln(stderr, "allbash: -allow-skip is ignored under CI: a skip counts as failed (all.bash installs the tools)")
		*allowSkip = false
	}
	steps, err := readSteps(fs.Arg(0))
	if err != nil {
		return err
	}
	s := summarize(steps, *allowSkip)
	s.print(stdout, fs.Arg(0))
	if s.failed > 0 {
		return errFailed
	}
	return nil
}

func runTools(args []string) error {
	fs := flag.NewFlagSet("allbash tools", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "")
	installed := fs.String("installed", "", "")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 || *out == "" {
		return usageError{"tools wants -o RECORDS and one TOOLSFILE"}
	}
	return checkTools(fs.Arg(0), *installed, *out)
}

func runInstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("allbash install", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	state := fs.String("state", "", "")
	logName := fs.String("log", "", "")
	allowSkip := fs.Bool("allow-skip", false, "")
	ci := fs.Bool("ci", false, "")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageError{"install wants one TOOLSFILE"}
	}
	logw := stderr
	if *logName != "" {
		f, err := os.OpenFile(*logName, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
		if err != nil {
			return fmt.Errorf("opening the install log: %w", err)
		}
		defer f.Close()
		logw = f
	}
	err := hostInstaller.install(fs.Arg(0), *state, stdout, logw)
	var cannot errCannotInstall
	if errors.As(err, &cannot) && *allowSkip && !*ci {
		fmt.Fprintf(stdout, "all.bash: -allow-skip: going on without %s; the steps that need them list skips\n", strings.Join(cannot.cmds, " "))
		return nil
	}
	if err != nil {
		return installFailed{err}
	}
	return nil
}
