// Ps lists the goroutines of a running Go program built by the fpsafe fork,
// as ps lists processes: goroutine id, parent, state, wait reason, the
// function it runs and the go statement that created it. It lists the
// goroutines the program's own goroutine dump shows, in goroutine id order.
//
//	ps [-stacks] [-system] [-stats] PID
//
// -stacks prints each goroutine's stack below it, the frames the program's
// own dump prints. -system lists the runtime's own goroutines too, marked
// "(runtime)". -stats prints to standard error how many goroutines were
// read and with how many read calls.
//
// It is the lineage package's example program. Exit status: 0, 1 if the
// process cannot be read, 2 for bad usage, 3 if the process exited.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"fpsafe.dev/misc/lineage"
)

func main() {
	stacks := flag.Bool("stacks", false, "print every goroutine's stack")
	system := flag.Bool("system", false, "also list the runtime's own goroutines")
	stats := flag.Bool("stats", false, "print the read's counts to standard error")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: ps [-stacks] [-system] [-stats] PID")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	pid, err := strconv.Atoi(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ps: bad PID", flag.Arg(0))
		os.Exit(2)
	}
	err = ps(os.Stdout, os.Stderr, pid, *stacks, *system, *stats)
	switch {
	case err == nil:
	case errors.Is(err, lineage.ErrExited):
		fmt.Fprintln(os.Stderr, "ps:", err)
		os.Exit(3)
	case errors.Is(err, lineage.ErrNoLineage):
		fmt.Fprintf(os.Stderr, "ps: %v\nps: build the program with the fpsafe toolchain\n", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "ps:", err)
		os.Exit(1)
	}
}

func ps(stdout, stderr io.Writer, pid int, stacks, system, stats bool) error {
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, pid, nil)
	if err != nil {
		return err
	}
	defer p.Close()
	var snap *lineage.Snapshot
	if stacks {
		snap, err = p.GoroutineStacks(ctx)
	} else {
		snap, err = p.Goroutines(ctx)
	}
	if err != nil {
		return err
	}
	if stats {
		fmt.Fprintf(stderr, "ps: %d goroutines, %d read calls, %d left out (changing)\n", len(snap.Goroutines), snap.Reads, snap.Torn)
	}
	if stacks {
		return writeStacks(stdout, snap, system)
	}
	w := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "GOID\tPARENT\tSTATE\tWAIT\tFUNCTION\tCREATED BY")
	for _, g := range snap.Goroutines {
		if g.System && !system {
			continue
		}
		fmt.Fprintln(w, row(g))
	}
	if snap.Torn > 0 {
		fmt.Fprintf(w, "(%d goroutines changed while read and are not listed)\n", snap.Torn)
	}
	return w.Flush()
}

// row is a goroutine's line of the listing, tab-separated.
func row(g *lineage.Goroutine) string {
	wait := g.WaitReason
	if g.Wait.Kind != lineage.WaitNone && g.Wait.Addr != 0 {
		wait += fmt.Sprintf(" (%s %#x)", g.Wait.Kind, g.Wait.Addr)
	}
	created := "-"
	if c := g.CreatedBy; c.Function != "" {
		created = fmt.Sprintf("%s (%s:%d)", c.Function, c.File, c.Line)
	}
	fn := dash(g.Start.Function)
	if g.System {
		fn += " (runtime)"
	}
	return fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s", g.ID, g.Parent, g.State, dash(wait), fn, created)
}

// writeStacks prints each goroutine with the frames its program's own dump
// prints. A listing of ten thousand goroutines has hundreds of thousands
// of lines: they are appended to one buffer, written 64 KB at a time,
// rather than formatted one by one with fmt, which would take as long as
// the read itself.
func writeStacks(stdout io.Writer, snap *lineage.Snapshot, system bool) error {
	w := bufio.NewWriterSize(stdout, 64<<10)
	var b []byte
	for _, g := range snap.Goroutines {
		if g.System && !system {
			continue
		}
		state := string(g.State)
		if g.State == lineage.StateWaiting && g.WaitReason != "" {
			state = g.WaitReason
		}
		b = append(b[:0], "goroutine "...)
		b = strconv.AppendUint(b, g.ID, 10)
		b = append(b, " ["...)
		b = append(b, state...)
		b = append(b, "]:\n"...)
		for _, f := range lineage.DumpFrames(g.Stack) {
			b = append(b, f.Function...)
			b = appendFileLine(append(b, "\n\t"...), f.File, f.Line)
		}
		if g.StackErr != nil {
			b = append(b, "\t("...)
			b = append(b, g.StackErr.Error()...)
			b = append(b, ")\n"...)
		}
		if c := g.CreatedBy; c.Function != "" {
			b = append(b, "created by "...)
			b = append(b, c.Function...)
			b = append(b, " in goroutine "...)
			b = strconv.AppendUint(b, g.Parent, 10)
			b = appendFileLine(append(b, "\n\t"...), c.File, c.Line)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}

// appendFileLine appends "file:line\n".
func appendFileLine(b []byte, file string, line int) []byte {
	b = append(b, file...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(line), 10)
	return append(b, '\n')
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
