package main

import (
	"flag"
	"fmt"
	"io"

	"fpsafe.dev/misc/fpcheck/internal/bincheck"
	"fpsafe.dev/misc/internal/gobin"
)

func cmdBinary(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fpcheck binary", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "also list stack-switching functions without findings")
	dis := fs.String("d", "", "print the decoded instructions of function `name` and exit")
	jsonOut := fs.Bool("json", false, "print one JSON report per file instead of text")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck binary [-json] [-v] [-d FUNC] FILE...\n\n"+
			"Checks that every TOPFRAME function and every function entered from C or the\n"+
			"kernel clears or deliberately links the frame pointer before its first call,\n"+
			"and that stack switches do not call on the new stack with a frame pointer into\n"+
			"the old one.\n\n%s\nFlags:\n", exitText)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	return eachFile(fs.Args(), func(path string) error {
		return checkBinary(stdout, path, *dis, *verbose, *jsonOut)
	})
}

// checkBinary reports on one file, or disassembles function dis in it.
func checkBinary(stdout io.Writer, path, dis string, verbose, jsonOut bool) error {
	b, err := gobin.Open(path)
	if err != nil {
		return err
	}
	defer b.Close()
	if dis != "" {
		if err := bincheck.Disassemble(stdout, b, dis); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	r, err := bincheck.Check(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if jsonOut {
		if err := writeJSON(stdout, r); err != nil {
			return err
		}
	} else {
		r.Write(stdout, verbose)
	}
	if n := r.Violations(); n > 0 {
		return &findingsError{}
	}
	return nil
}
