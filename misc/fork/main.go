// Command fork is the workflow between the fork's repository (patches/, src/, VERSION) and
// goroot/, the work tree that make.bash builds. The repository's ./fork script runs it.
//
// The series. patches/series lists the patches in order, one file name per line. Under a
// patch, tab-indented lines name the new files (GOROOT-relative, such as
// src/runtime/lineage.go) that this patch introduces; the repository stores each at the same
// path, as the introducing patch brings it: its final content, since a patch's diff changes
// upstream files only (check enforces it). Lines starting with # are comments.
//
// The work tree comes in two shapes. make.bash lays out a plain tree: upstream copied, the
// series applied, no git history, so that a build costs what upstream's own make.bash costs.
// "fork apply" gives goroot/ a git history: a commit of pristine upstream (tagged
// "upstream"), one commit per patch (its new files plus its diff), and "fork: VERSION". It
// writes that history with git plumbing, without rewriting the files of a tree already laid
// out, so turning a built plain tree into a developer's tree costs seconds and no rebuild.
// "fork extract" turns the commits after "upstream" back into the series; "fork check"
// verifies the round trip byte for byte and that every commit builds.
//
// See doc/workflow.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage: fork VERB [flags]

The fork's workflow between the repository (patches/series, patches/*.patch, src/, VERSION)
and the work tree goroot/. See doc/workflow.md.

Verbs:
  apply      lay out goroot/ from upstream plus the series, with a git history: one commit
             per patch, then "fork: VERSION". Keeps the files of a current plain tree (no
             rebuild needed). Refuses to replace a tree holding uncommitted edits or
             commits not yet extracted.
  extract    turn goroot/'s commits after the tag "upstream" back into patches/, src/ and
             VERSION; removes patches and new files the series no longer names.
  check      check that no patch's diff changes a new file of the series and that src/
             holds each as the last commit does; apply the series into a scratch tree,
             extract it, compare byte for byte with the repository, and build every
             commit after "upstream"
             (go build runtime runtime/pprof runtime/trace; also cmd/asm cmd/compile
             cmd/link cmd/go for commits touching src/cmd/).
             Flags: -nobuild  skip the per-commit builds
                    -keep     keep the scratch tree and print its path
  status     what goroot/ holds: shape, applied, built, edits, unextracted commits
  make       what make.bash does: lay out goroot/ as a plain tree when the series changed
             (refusing to replace unsaved work), run upstream's make.bash in it when its
             sources changed since the last build. A no-op when nothing changed.
  tools      build fpcheck and golineage (misc/fpcheck, misc/golineage) with the fork's go
             into goroot/bin
  upstream   print the pristine upstream GOROOT (fetching it if needed)

Global flag (before the verb):
  -top DIR   the repository (default: the current directory)

Environment:
  FORK_UPSTREAM  an upstream GOROOT to use instead of fetching the release VERSION names (tests use it)
  FORK_WORK      the work tree (default: TOP/goroot)

Exit codes: 0 success; 1 failure (a one-line error says what to do); 2 bad usage.
`

// errUsage marks bad command lines: exit code 2.
var errUsage = errors.New("bad usage")

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

func cli(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "fork: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "fork: %v\n", err)
		return 1
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fork", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	top := fs.String("top", ".", "")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no verb", errUsage)
	}
	verb, rest := fs.Arg(0), fs.Args()[1:]
	if verb == "help" || verb == "-h" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch verb {
	case "apply", "extract", "check", "status", "make", "tools", "upstream":
	default:
		return fmt.Errorf("%w: unknown verb %q", errUsage, verb)
	}
	vfs := flag.NewFlagSet(verb, flag.ContinueOnError)
	vfs.SetOutput(io.Discard)
	nobuild := vfs.Bool("nobuild", false, "")
	keep := vfs.Bool("keep", false, "")
	if err := vfs.Parse(rest); err != nil {
		return fmt.Errorf("%w: %s: %v", errUsage, verb, err)
	}
	if vfs.NArg() > 0 {
		return fmt.Errorf("%w: %s takes no arguments", errUsage, verb)
	}
	if verb != "check" && (*nobuild || *keep) {
		return fmt.Errorf("%w: -nobuild and -keep are flags of check", errUsage)
	}
	f, err := newFork(*top, stderr)
	if err != nil {
		return err
	}
	switch verb {
	case "apply":
		return f.apply()
	case "extract":
		return f.extract()
	case "check":
		return f.check(stdout, !*nobuild, *keep)
	case "status":
		return f.status(stdout)
	case "make":
		return f.make(stdout)
	case "tools":
		return f.tools(stdout)
	case "upstream":
		up, err := f.upstream()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, up)
		return nil
	}
	panic("unreachable")
}
