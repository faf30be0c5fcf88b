package main

import (
	"flag"
	"fmt"
	"os"

	"fpsafe.dev/misc/fpcheck/internal/bincheck"
	"fpsafe.dev/misc/internal/gobin"
)

var subcommands = map[string]func([]string) int{
	"binary": cmdBinary,
	"run":    cmdRun,
	"perf":   cmdPerf,
}

const (
	exitClean    = 0
	exitFindings = 1
	exitUsage    = 2
)

func cmdBinary(args []string) int {
	fs := flag.NewFlagSet("fpcheck binary", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "also list stack-switching functions without findings")
	dis := fs.String("d", "", "print the decoded instructions of function `name` and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck binary [-v] FILE...\n\n"+
			"Checks that every TOPFRAME function and every function entered from C or the\n"+
			"kernel clears or deliberately links the frame pointer before its first call,\n"+
			"and that stack switches do not call on the new stack with a frame pointer into\n"+
			"the old one. Exit 0 clean, 1 violations, 2 bad input.\n")
		fs.PrintDefaults()
	}
	if !parseArgs(fs, args) {
		return exitUsage
	}
	rc := exitClean
	for _, path := range fs.Args() {
		b, err := gobin.Open(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fpcheck: %v\n", err)
			rc = exitUsage
			continue
		}
		if *dis != "" {
			err := bincheck.Disassemble(os.Stdout, b, *dis)
			b.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "fpcheck: %s: %v\n", path, err)
				rc = exitUsage
			}
			continue
		}
		r, err := bincheck.Check(b)
		b.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "fpcheck: %s: %v\n", path, err)
			rc = exitUsage
			continue
		}
		r.Write(os.Stdout, *verbose)
		if r.Violations() > 0 && rc == exitClean {
			rc = exitFindings
		}
	}
	return rc
}
