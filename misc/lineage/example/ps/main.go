// Ps lists the goroutines of a running Go program built by the fpsafe fork,
// as ps lists processes: goroutine id, parent, state, wait reason, the
// function it runs and the go statement that created it.
//
//	ps PID
//
// It is the lineage package's example program.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"text/tabwriter"

	"fpsafe.dev/misc/lineage"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ps PID")
		os.Exit(2)
	}
	pid, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ps: bad PID", os.Args[1])
		os.Exit(2)
	}
	if err := ps(pid); err != nil {
		fmt.Fprintln(os.Stderr, "ps:", err)
		os.Exit(1)
	}
}

func ps(pid int) error {
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, pid, nil)
	if err != nil {
		return err
	}
	defer p.Close()
	snap, err := p.Goroutines(ctx)
	if err != nil {
		return err
	}
	gs := snap.Goroutines
	sort.Slice(gs, func(i, j int) bool { return gs[i].ID < gs[j].ID })
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "GOID\tPARENT\tSTATE\tWAIT\tFUNCTION\tCREATED BY")
	for _, g := range gs {
		wait := g.WaitReason
		if g.Wait.Kind != "" && g.Wait.Addr != 0 {
			wait += fmt.Sprintf(" (%s %#x)", g.Wait.Kind, g.Wait.Addr)
		}
		created := "-"
		if c := g.CreatedBy; c.Function != "" {
			created = fmt.Sprintf("%s (%s:%d)", c.Function, c.File, c.Line)
		}
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\n", g.ID, g.Parent, g.State, dash(wait), dash(g.Start.Function), created)
	}
	if snap.Torn > 0 {
		fmt.Fprintf(w, "(%d goroutines changed while read and are not listed)\n", snap.Torn)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
