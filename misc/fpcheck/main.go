package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/unitchecker"
	"golang.org/x/tools/go/packages"

	"fpsafe.dev/misc/fpcheck/internal/asmfp"
)

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes, as the usage text documents them.
const (
	exitClean    = 0
	exitFindings = 1 // the check ran and found violations
	exitUsage    = 2 // bad flags or arguments
	exitFailure  = 3 // the check could not run: bad input, perf unusable, the program failed
)

const exitText = "Exit status: 0 clean, 1 findings, 2 usage error, 3 failure (bad input file,\n" +
	"package that does not load, perf unusable, program crashed or timed out, no\n" +
	"SFrame table).\n"

// findingsError says a check ran and found violations; its message, if
// any, adds what the report does not say.
type findingsError struct{ msg string }

func (e *findingsError) Error() string { return e.msg }

// usageError is a bad command line. An empty message means the flag
// package or the usage text has said it already.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// cli runs fpcheck and maps run's error to an exit code, printing it.
func cli(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout, stderr)
	if err == nil {
		return exitClean
	}
	code := exitCode(err)
	for _, l := range strings.Split(err.Error(), "\n") {
		if l != "" {
			fmt.Fprintf(stderr, "fpcheck: %s\n", l)
		}
	}
	return code
}

// exitCode classifies err, possibly joined from several: any failure wins
// over findings, a usage error over both.
func exitCode(err error) int {
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *findingsError
		if !errors.As(e, &fe) {
			return exitFailure
		}
	}
	return exitFindings
}

// run is fpcheck with its command line and output streams.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if cmd, ok := subcommands[args[0]]; ok {
			return cmd(args[1:], stdout, stderr)
		}
	}
	// go vet -vettool speaks the unitchecker protocol: -V=full, -flags, or a
	// single .cfg file describing one package. unitchecker prints to the
	// process's streams and exits itself.
	for _, a := range args {
		if a == "-V=full" || a == "-V" || a == "-flags" || strings.HasSuffix(a, ".cfg") {
			unitchecker.Main(asmfp.Analyzers...)
		}
	}
	return analyze(args, stdout, stderr)
}

var subcommands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"binary": cmdBinary,
	"run":    cmdRun,
	"perf":   cmdPerf,
	"sframe": cmdSFrame,
}

// analyze is the standalone analysis driver. Diagnostics go to stderr as
// text (as go vet prints them), to stdout with -json.
func analyze(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fpcheck", flag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "print diagnostics as JSON on stdout")
	tests := fs.Bool("test", false, "also analyse test packages")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck [-json] [-test] PACKAGES\n"+
			"       go vet -vettool=$(which fpcheck) PACKAGES\n"+
			"       fpcheck binary [-json] [-v] [-d FUNC] FILE...\n"+
			"       fpcheck run [-timeout D] [-q] -- CMD ARGS...\n"+
			"       fpcheck perf [-json] [-o DIR] [-F HZ] [-timeout D] -- CMD ARGS...\n"+
			"       fpcheck perf [-json] -i FILE\n"+
			"       fpcheck sframe [-json] [-n N] [-d FUNC] BINARY...\n\n"+
			"Analyses Go assembly (amd64, arm64) for frame-pointer chains that do not end or\n"+
			"link where they must. Analyzers:\n")
		for _, a := range asmfp.Analyzers {
			fmt.Fprintf(fs.Output(), "  %-14s %s\n", a.Name, strings.SplitN(a.Doc, "\n", 2)[0])
		}
		fmt.Fprintf(fs.Output(), "\n%s\nFlags:\n", exitText)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	cfg := &packages.Config{Mode: packages.LoadSyntax, Tests: *tests}
	pkgs, err := packages.Load(cfg, fs.Args()...)
	if err != nil {
		return fmt.Errorf("loading %s: %w", strings.Join(fs.Args(), " "), err)
	}
	nerr := 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			fmt.Fprintln(stderr, e)
			nerr++
		}
	})
	if nerr > 0 {
		return fmt.Errorf("%d package errors (above): fix them or check the pattern", nerr)
	}
	g, err := checker.Analyze(asmfp.Analyzers, pkgs, nil)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	if *jsonOut {
		g.PrintJSON(stdout)
	} else {
		g.PrintText(stderr, -1)
	}
	n := 0
	for act := range g.All() {
		if act.IsRoot {
			n += len(act.Diagnostics)
			if act.Err != nil {
				return fmt.Errorf("%s: %w", act.Package.PkgPath, act.Err)
			}
		}
	}
	if n > 0 {
		return &findingsError{}
	}
	return nil
}

// parseArgs parses a command's flags and requires at least one argument,
// printing the usage to stderr otherwise.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return &usageError{} // the flag package printed the error and the usage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &usageError{}
	}
	return nil
}

// writeJSON prints v as every -json report is printed: indented with tabs,
// without HTML escapes.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// eachFile runs check on every path and joins the errors.
func eachFile(paths []string, check func(path string) error) error {
	var errs []error
	for _, path := range paths {
		if err := check(path); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
