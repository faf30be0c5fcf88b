package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// snapshot is a target held still: a stopped process or a core file.
type snapshot struct {
	ctx     context.Context // nil: never canceled
	bin     *gobin.Binary
	bias    uint64
	threads []target.Thread
	mem     target.Mem
	abi     *lineageabi.ABI // nil when only native stacks are wanted
	live    bool            // a stopped live process (not a core)
	// damage is what the read skipped or flagged (a damaged core); it
	// makes the exit status non-zero after the output.
	damage *damage
}

func stacksFlags(fl *flag.FlagSet) func(*invocation) error {
	var ta targetArgs
	ta.add(fl)
	native := fl.Bool("native", false, "print native stacks only (allowed for binaries without the lineage ABI)")
	all := fl.Bool("all", false, "also print every goroutine that is not running, from the goroutine registry")
	return func(inv *invocation) error {
		if *all && *native {
			return inv.usage("-all needs the lineage ABI; it cannot be combined with -native")
		}
		if ta.filter.active() && *native {
			return inv.usage("-goid, -state and -func need the lineage ABI; they cannot be combined with -native")
		}
		if err := ta.parse(inv); err != nil {
			return err
		}
		return runStacks(inv, ta, *native, *all)
	}
}

func runStacks(inv *invocation, ta targetArgs, native, all bool) error {
	stderr := inv.stderr
	var (
		snap    *snapshot
		threads []stack.Thread
		set     *goroutineSet
		serr    error
		werr    error
	)
	if native {
		werr = withSnapshot(inv.ctx, ta, true, stderr, nil, func(s *snapshot) {
			snap, threads = s, collect(s)
		})
	} else {
		// A filter needs every goroutine's state and stack, even for
		// the threads alone.
		var r goroutineRead
		r, serr, werr = readTarget(inv.ctx, ta, all || ta.filter.active(), stderr)
		snap, threads, set = r.snap, r.threads, r.set
		if ta.stats && r.stats != nil {
			r.stats.write(stderr)
		}
	}
	if err := inv.ctx.Err(); err != nil {
		return err // interrupted: the threads read are not printed either
	}
	if snap == nil {
		if serr != nil {
			return serr
		}
		return werr
	}
	if set != nil {
		ta.filter.apply(set, false)
		threads = ta.filter.threads(set, threads)
	}
	err := writeOutput(inv.ctx, inv.stdout, stderr, func(w *bufio.Writer, _ io.Writer) error {
		if err := writeThreads(w, snap, threads); err != nil {
			return err
		}
		if set != nil && all {
			set.writeStacks(w)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	return werr
}

func writeThreads(w *bufio.Writer, snap *snapshot, threads []stack.Thread) error {
	for _, t := range threads {
		stack.Write(w, snap.bin, snap.bias, t)
	}
	return w.Flush()
}

func parsePID(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, usageError{msg: fmt.Sprintf("%q is not a process id", s)}
	}
	return pid, nil
}

// findABI finds bin's lineage header, or nil for -native.
func findABI(bin *gobin.Binary, native bool) (*lineageabi.ABI, error) {
	if native {
		return nil, nil
	}
	return (&opentarget.Exe{Bin: bin}).FindABI()
}

// collect unwinds, symbolizes and stitches every thread of snap. It must run
// while the target is stopped.
func collect(snap *snapshot) []stack.Thread {
	view, verr := loadView(snap)
	plausible := lineageabi.NewPlausible(textRanges(snap), nil)
	var out []stack.Thread
	for _, th := range snap.threads {
		r := readThread(snap, view, verr, th)
		if n := plausible.CheckRecord(r.rec); n > 0 {
			r.note = fmt.Sprintf("lineage: impossible %s in the record (corrupt memory?)", r.rec.Bad)
			snap.damage.addFlagged(n, fmt.Errorf("thread %d: impossible %s in its lineage record", th.TID, r.rec.Bad))
		}
		out = append(out, r.thread(snap))
	}
	if view != nil {
		snap.damage.addView(view)
	}
	return out
}

// threadRead is what is read of one stopped thread: its walk and the
// record of the goroutine it runs. Symbolizing it needs no target memory,
// so it can wait until the thread runs again.
type threadRead struct {
	th   target.Thread
	walk stack.Walk
	rec  *lineageabi.Record
	g    *lineageabi.Goroutine // the goroutine as its g showed it then
	view *lineageabi.View
	note string
}

// readThread unwinds thread th of snap and reads its lineage record (view
// may be nil: no lineage; verr: why the header could not be read).
func readThread(snap *snapshot, view *lineageabi.View, verr error, th target.Thread) threadRead {
	r := threadRead{th: th, walk: stack.Unwind(snap.mem, snap.bin, snap.bias, th.Regs), view: view}
	switch {
	case verr != nil:
		r.note = "lineage: " + verr.Error()
	case view != nil:
		rec, g, err := view.ThreadGoroutine(uint64(th.TID))
		if err != nil {
			r.note = "lineage: " + err.Error()
		}
		r.rec, r.g = rec, g
	}
	return r
}

// thread symbolizes and stitches a thread read.
func (r threadRead) thread(snap *snapshot) stack.Thread {
	t := stack.Thread{TID: r.th.TID, State: r.th.State, Stop: r.walk.Stop, Note: r.note}
	t.Frames = stack.SymbolizeWalk(snap.bin, snap.bias, r.walk)
	if r.rec != nil {
		t.Goid, t.Lineage = r.rec.Goid, lineageabi.Chain(r.rec)
		if r.rec.Truncated() {
			t.Note = fmt.Sprintf("older ancestors not recorded: true depth %d, GODEBUG=lineage keeps %d", r.rec.Depth, r.view.H.MaxDepth)
		}
	}
	if r.view != nil && r.view.Note != "" {
		t.Note = r.view.Note
	}
	return t
}

// loadView reads the lineage header and registry of a stopped target.
func loadView(snap *snapshot) (*lineageabi.View, error) {
	if snap.abi == nil {
		return nil, nil
	}
	v, err := snap.abi.Load(snap.mem, snap.bias)
	if err != nil {
		return nil, err
	}
	v = v.WithContext(snap.ctx)
	v.ReadLabels = true
	return v, nil
}

// canceled is the error of snap's context, nil while the read goes on.
func (snap *snapshot) canceled() error {
	if snap.ctx == nil {
		return nil
	}
	return snap.ctx.Err()
}
