package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
	"fpsafe.dev/misc/lineage"
)

// Every goroutine of a process or core, from the lineage registry
// (doc/lineage-abi.md, section 13): ps lists them, tree shows who created
// whom, waits groups them by what they wait on, and stacks -all prints the
// stack of each one, walked by frame pointers from its saved sched.bp.

// goroutine is one goroutine as the commands print it.
type goroutine struct {
	*lineageabi.Goroutine
	TID    int           // thread running it, 0 if none
	Wait   time.Duration // how long it has waited, if known (live targets)
	Frames []stack.Loc   // its stack, innermost first
	Stop   string        // why the stack walk ended early
	// named is what its stack says its start is, where its start PC's
	// code does not (goroutineSet.nameFromStacks); nil otherwise.
	named *startName
}

// lineage is the goroutine's creation chain, parent first.
func (g *goroutine) lineage() []stack.Ancestor { return lineageabi.Chain(g.Record) }

// goroutineSet is what one stopped target shows.
type goroutineSet struct {
	snap *snapshot
	gs   []goroutine
	torn int    // records that kept changing (live targets only)
	note string // why the set is empty or partial

	machine bool              // the output is JSON lines: notes go to stderr
	json    jsonMemo          // what writeJSON printed already
	names   *stack.StartNamer // goroutine names by start PC

	// The target's monotonic clock (the runtime's nanotime) and the wall
	// clock when it was read, live targets only: wait_since is a wall time.
	monoNow, wallNow int64
}

// targetArgs is what the goroutine commands read: "PID" or "--core CORE
// EXE", and how.
type targetArgs struct {
	pid       int
	core, exe string
	stop      bool // -stop: hold a live process stopped for the whole read
	stats     bool // -stats: report the read's cost on stderr
	filter    filter
}

// add defines the flags of the commands that read every goroutine.
func (ta *targetArgs) add(fl *flag.FlagSet) {
	fl.StringVar(&ta.core, "core", "", "read the core file `CORE` instead of a live process; EXE follows")
	fl.BoolVar(&ta.stop, "stop", false, "stop every thread of a live process for the whole read (one instant, at the cost of stopping the target throughout)")
	fl.BoolVar(&ta.stats, "stats", false, "print to standard error how long the read took and how long threads were stopped")
	ta.filter.add(fl)
}

// parse reads the operands: PID, or EXE after --core.
func (ta *targetArgs) parse(inv *invocation) error {
	if ta.core != "" {
		if len(inv.args) != 1 {
			return inv.usage("--core CORE EXE: need exactly one EXE")
		}
		ta.exe = inv.args[0]
		return nil
	}
	if len(inv.args) != 1 {
		return inv.usage("need exactly one PID (or --core CORE EXE)")
	}
	var err error
	ta.pid, err = parsePID(inv.args[0])
	return err
}

// withSnapshot holds the target still (stops every thread of a live
// process, or opens a core) and runs f on it. What the read of a core
// skipped or flagged (a core cut short or corrupt) comes back after f ran
// as an error of one line that counts it. The stop is recorded
// in stats, if not nil.
func withSnapshot(ctx context.Context, ta targetArgs, native bool, stderr io.Writer, stats *readStats, f func(snap *snapshot)) error {
	if ta.core != "" {
		snap, closer, err := openCore(ta.core, ta.exe, native)
		if err != nil {
			return err
		}
		defer closer()
		snap.ctx = ctx
		f(snap)
		return snap.damage.err()
	}
	p, err := lineage.OpenPID(ctx, ta.pid, &lineage.Options{NoLineage: native})
	if err != nil {
		return err
	}
	defer p.Close()
	// The executable file symbolizes; the process is read through p.
	exe, err := opentarget.OpenLiveExe(ta.pid)
	if err != nil {
		return err
	}
	defer exe.Close()
	abi, err := findABI(exe.Bin, native)
	if err != nil {
		return err
	}
	held, err := p.Stop(ctx)
	if err != nil {
		return err
	}
	defer held.Resume()
	f(&snapshot{ctx: ctx, bin: exe.Bin, bias: p.LoadBias(), threads: sdkThreads(held.Threads()), mem: held, abi: abi, live: true})
	err = held.Resume()
	if n := len(held.Threads()); stats != nil && n > 0 {
		d := held.Held()
		stats.stops = append(stats.stops, threadStop{threads: n, d: d, held: d})
	}
	return err
}

// sdkThreads are threads read through the SDK (a stopped process's, a
// core's) as the stack walker takes them.
func sdkThreads(ts []lineage.Thread) []target.Thread {
	var out []target.Thread
	for _, th := range ts {
		out = append(out, target.Thread{TID: th.TID, Regs: target.Regs(th.Registers), State: th.State})
	}
	return out
}

// collectGoroutines reads every goroutine of a stopped target, with its
// stack and lineage. The running ones get their thread's stack. If the
// registry cannot be read at all in a damaged core, the error says what
// else the core lost.
func collectGoroutines(snap *snapshot, threads []stack.Thread) (*goroutineSet, error) {
	view, err := loadView(snap)
	if err != nil {
		return nil, snap.damage.with(err)
	}
	gs, torn, err := registryGoroutines(snap, view)
	if err != nil {
		return nil, snap.damage.with(err)
	}
	set := newGoroutineSet(snap, view.Note, gs, nil, threads, nil, torn)
	if err := snap.canceled(); err != nil {
		return nil, err
	}
	set.nameStarts() // now: the executable is closed once the snapshot is
	return set, nil
}

// elideWrappers drops compiler-generated wrappers (go statement and method
// wrappers), as the runtime's own goroutine dump does, so that a goroutine
// reads the same from outside as from inside; but it keeps every frame of
// a stack whose frames the dump would all hide, which the runtime then
// prints whole (stack.DumpShowsAny): a goroutine not started yet shows its go
// statement's wrapper and runtime.goexit.
func elideWrappers(locs []stack.Loc) []stack.Loc {
	if !stack.DumpShowsAny(locs) {
		return locs
	}
	out := locs[:0]
	callee := ""
	for _, l := range locs {
		if !l.Wrapper || stack.PanicCallee(callee) {
			out = append(out, l)
		}
		callee = l.Func
	}
	return out
}

// savedRegs gives the registers a goroutine that is not running resumes
// with (lineageabi.SavedRegs).
func savedRegs(g lineageabi.Goroutine) (target.Regs, bool) { return lineageabi.SavedRegs(&g) }

// state prints what a goroutine does, as the runtime's goroutine headers do.
func (g *goroutine) state() string {
	s := lineageabi.StatusName(g.Status)
	if g.Status == lineageabi.StatusWaiting && g.WaitReason != "" {
		s = g.WaitReason
	}
	if g.Wait >= time.Minute {
		s += fmt.Sprintf(", %d minutes", int(g.Wait/time.Minute))
	}
	return s
}

// waitObject names what a goroutine waits on, "" if nothing known.
func (g *goroutine) waitObject() string {
	switch {
	case len(g.WaitChans) > 1 || g.Select:
		var cs []string
		for _, c := range g.WaitChans {
			cs = append(cs, fmt.Sprintf("%#x", c))
		}
		return "select{" + strings.Join(cs, ",") + "}"
	case len(g.WaitChans) == 1:
		return fmt.Sprintf("chan %#x", g.WaitChans[0])
	case g.WaitAddr != 0:
		return g.waitAddrName()
	}
	return ""
}

// waitAddrName names a wait address: "KIND 0xADDR" (waitAddrObject).
func (g *goroutine) waitAddrName() string {
	kind, addr := g.waitAddrObject()
	return fmt.Sprintf("%s %#x", kind, addr)
}

// waitAddrObject is what a goroutine blocked on a wait address waits for
// (lineageabi.SemaObject).
func (g *goroutine) waitAddrObject() (kind string, addr uint64) {
	return lineageabi.SemaObject(g.WaitReason, g.WaitAddr)
}

// userFrame is the goroutine's innermost frame outside the runtime and the
// sync packages: where the program waits.
func (g *goroutine) userFrame() (stack.Loc, bool) {
	for _, l := range g.Frames {
		pkg := l.Func
		if i := strings.LastIndex(pkg, "/"); i >= 0 {
			pkg = pkg[i+1:]
		}
		pkg, _, _ = strings.Cut(pkg, ".")
		if l.Func == "" || pkg == "runtime" || pkg == "sync" || strings.HasPrefix(l.Func, "internal/") {
			continue
		}
		return l, true
	}
	return stack.Loc{}, false
}

// createdAt is where the goroutine was created, "" for the runtime's own.
func (s *goroutineSet) createdAt(g *goroutine) string {
	if g.Record.Bad&lineageabi.BadGoPC != 0 {
		return "?"
	}
	lin := g.lineage()
	if len(lin) == 0 {
		return ""
	}
	l := stack.CreatedBy(s.snap.bin, s.snap.bias, lin[0])
	return fmt.Sprintf("%s:%d", l.File, l.Line)
}

func psFlags(fl *flag.FlagSet) func(*invocation) error {
	var ta targetArgs
	ta.add(fl)
	asJSON := fl.Bool("json", false, "print JSON, one object per goroutine and line")
	stacks := fl.Bool("stacks", false, "with -json, give each goroutine's stack")
	return func(inv *invocation) error {
		if *stacks && !*asJSON {
			return inv.usage("-stacks needs -json (stacks -all prints every goroutine's stack as text)")
		}
		return goroutineCommand(inv, &ta, func(w *bufio.Writer, s *goroutineSet) error {
			if *asJSON {
				s.machine = true
				return s.writeJSON(w, *stacks)
			}
			s.writePs(w)
			return nil
		})
	}
}

func treeFlags(fl *flag.FlagSet) func(*invocation) error {
	return simpleGoroutineCommand(fl, (*goroutineSet).writeTree, (*goroutineSet).writeTreeJSON)
}

func waitsFlags(fl *flag.FlagSet) func(*invocation) error {
	return simpleGoroutineCommand(fl, (*goroutineSet).writeWaits, (*goroutineSet).writeWaitsJSON)
}

// simpleGoroutineCommand is a goroutine command with only the read flags
// and -json: write prints text, writeJSON one JSON object per line.
func simpleGoroutineCommand(fl *flag.FlagSet, write func(*goroutineSet, io.Writer), writeJSON func(*goroutineSet, io.Writer) error) func(*invocation) error {
	var ta targetArgs
	ta.add(fl)
	asJSON := fl.Bool("json", false, "print JSON, one object per line")
	return func(inv *invocation) error {
		return goroutineCommand(inv, &ta, func(w *bufio.Writer, s *goroutineSet) error {
			if *asJSON {
				s.machine = true
				return writeJSON(s, w)
			}
			write(s, w)
			return nil
		})
	}
}

// goroutineCommand runs a goroutine command: it reads every goroutine of
// the target (readTarget), keeps those ta's filter chooses, then prints
// with out.
func goroutineCommand(inv *invocation, ta *targetArgs, out func(*bufio.Writer, *goroutineSet) error) error {
	if err := ta.parse(inv); err != nil {
		return err
	}
	stderr := inv.stderr
	r, cerr, werr := readTarget(inv.ctx, *ta, true, stderr)
	if ta.stats && r.stats != nil {
		r.stats.write(stderr)
	}
	if cerr != nil {
		return cerr
	}
	set := r.set
	if set == nil {
		return werr
	}
	ta.filter.apply(set, inv.name == "tree")
	err := writeOutput(inv.ctx, inv.stdout, stderr, func(w *bufio.Writer, stderr io.Writer) error {
		if err := out(w, set); err != nil {
			return err
		}
		notes := io.Writer(w)
		if set.machine {
			notes = stderr
			if set.note != "" {
				fmt.Fprintf(stderr, "(%s)\n", set.note)
			}
		}
		if set.torn > 0 {
			fmt.Fprintf(notes, "(%d goroutines changed while read and were left out)\n", set.torn)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return werr
}

// writePs prints one line per goroutine. Each column is as wide as its
// longest entry (at least as wide as it has always been), so a long state
// ("sync.WaitGroup.Wait, 1234 minutes") or a select over many channels
// does not push the columns after it out of line.
func (s *goroutineSet) writePs(w io.Writer) {
	rows := make([][6]string, 0, len(s.gs)+1)
	rows = append(rows, [6]string{"GOID", "PARENT", "THREAD", "STATE", "WAITS ON", "FUNCTION (CREATED AT)"})
	for i := range s.gs {
		g := &s.gs[i]
		tid := "-"
		if g.TID != 0 {
			tid = fmt.Sprint(g.TID)
		}
		obj := g.waitObject()
		if obj == "" {
			obj = "-"
		}
		fn := s.startFunc(g)
		if at := s.createdAt(g); at != "" {
			fn += " (" + at + ")"
		}
		if len(g.Labels) > 0 {
			fn += " " + labelString(g.Labels)
		}
		rows = append(rows, [6]string{fmt.Sprint(g.Goid), g.parent(), tid, g.state(), obj, fn})
	}
	width := [5]int{7, 7, 6, 28, 24}
	for _, r := range rows {
		for c := range width {
			width[c] = max(width[c], len(r[c]))
		}
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s %-*s %-*s %-*s %-*s %s\n", width[0], r[0], width[1], r[1], width[2], r[2], width[3], r[3], width[4], r[4], r[5])
	}
	if s.note != "" {
		fmt.Fprintf(w, "(%s)\n", s.note)
	}
}

// labelString prints labels as runtime/pprof prints a label set:
// {"key":"value", ...}.
func labelString(ls []lineageabi.Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(l.Key) + ":" + strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// writeStacks prints every goroutine not on a thread, like the runtime's
// goroutine dump (stacks -all).
func (s *goroutineSet) writeStacks(w io.Writer) {
	for i := range s.gs {
		g := &s.gs[i]
		if g.TID != 0 {
			continue // printed with its thread
		}
		fmt.Fprintf(w, "goroutine %d [%s]:\n", g.Goid, g.state())
		stack.WriteFrames(w, g.Frames)
		if g.Stop != "" {
			fmt.Fprintf(w, "...stack walk ended: %s\n", g.Stop)
		}
		for _, a := range g.lineage() {
			stack.WriteCreatedBy(w, s.snap.bin, s.snap.bias, a)
		}
		if g.Record.Bad != 0 {
			fmt.Fprintf(w, "(lineage: impossible %s in the record, not shown)\n", g.Record.Bad)
		}
		fmt.Fprintln(w)
	}
}
