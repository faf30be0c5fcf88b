package main

import (
	"flag"
	"fmt"
	"io"

	"fpsafe.dev/misc/fpcheck/internal/sframecheck"
	"fpsafe.dev/misc/internal/gobin"
)

func cmdSFrame(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fpcheck sframe", flag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "print one JSON report per file instead of text")
	limit := fs.Int("n", 20, "list at most `N` ranges of each kind of finding")
	dump := fs.String("d", "", "print, for each instruction of function `name`, the model, the table's rule and the verdict, and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fpcheck sframe [-json] [-n N] [-d FUNC] BINARY...\n\n"+
			"Checks a Go binary's SFrame table: a version 3 .sframe in a PT_GNU_SFRAME\n"+
			"segment; for every PC of every function in the pclntab, an FDE and a row\n"+
			"that cover it, with a rule that agrees with the pclntab's SP delta and the\n"+
			"frame layout; stack roots marked outermost and signal trampolines marked.\n"+
			"Findings (exit 1): PCs without coverage, disagreeing rules, missing marks, a\n"+
			"table outside a PT_GNU_SFRAME segment. A file without an SFrame table, or\n"+
			"with one that does not decode, is a failure (exit 3).\n\n%s\nFlags:\n", exitText)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	if *limit < 0 {
		return &usageError{msg: fmt.Sprintf("-n %d: the limit must be 0 or more", *limit)}
	}
	return eachFile(fs.Args(), func(path string) error {
		return checkSFrame(stdout, path, *dump, *limit, *jsonOut)
	})
}

// checkSFrame reports on one file, or details function dump in it.
func checkSFrame(stdout io.Writer, path, dump string, limit int, jsonOut bool) error {
	b, err := gobin.Open(path)
	if err != nil {
		return err
	}
	defer b.Close()
	if dump != "" {
		return sframecheck.Dump(stdout, b, dump)
	}
	r, err := sframecheck.Check(b, limit)
	if err != nil {
		return err
	}
	if jsonOut {
		if err := writeJSON(stdout, r); err != nil {
			return err
		}
	} else {
		r.Write(stdout)
	}
	if n := r.Findings(); n > 0 {
		return &findingsError{msg: fmt.Sprintf("%s: %d SFrame finding(s)", path, n)}
	}
	return nil
}
