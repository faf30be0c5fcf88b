package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/lineageraw"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
	"fpsafe.dev/misc/lineage"
	"golang.org/x/sys/unix"
)

// Reading every goroutine of a live process without holding it stopped
// (README, "Every goroutine"): the threads are stopped one at a time, each
// only while its own registers, stack and lineage record are copied; then
// the goroutine registry is read with no thread stopped, every parked
// goroutine's stack walked from its saved registers by process_vm_readv,
// and each goroutine kept only if it did not change while it was read
// (lineageabi.ReadLive). A goroutine seen both on a thread and in the
// registry is the thread's.

// readStats is what a read of a live target cost it.
type readStats struct {
	mode  string
	start time.Time
	cpu0  time.Duration
	read  time.Duration // the whole read, from the first stop to the last goroutine
	cpu   time.Duration // the reader's CPU time (user and system) meanwhile
	stops []threadStop
	reg   lineageabi.LiveStats
	gs    int // goroutines in the result
	late  int // running in the registry, on no thread when threads were read
}

// threadStop is one stop of the target: how many threads were held
// together, how long all of them were in ptrace-stop (from the last one's
// entry to the detach), and how long they were held (from the first
// seizure to the detach; the difference is the wait for a thread to be
// scheduled so it can stop).
type threadStop struct {
	tid     int // the thread, when only one was held
	threads int
	d, held time.Duration
}

func (s *readStats) write(w io.Writer) {
	var total, longest, held time.Duration
	for _, st := range s.stops {
		total += time.Duration(st.threads) * st.d
		longest = max(longest, st.d)
		held = max(held, st.held)
	}
	// "held" is the longest time from a stop's first seizure to its
	// detach: the stop itself, plus the wait for the threads to stop.
	fmt.Fprintf(w, "golineage: %s read of %d goroutines in %v (%.0f ns per goroutine), cpu %v; %d stops, longest %v (held %v, with the wait for its threads to stop), thread stop time %v summed over threads",
		s.mode, s.gs, s.read.Round(time.Microsecond), float64(s.read.Nanoseconds())/float64(max(s.gs, 1)), s.cpu.Round(time.Microsecond),
		len(s.stops), longest.Round(time.Microsecond), held.Round(time.Microsecond), total.Round(time.Microsecond))
	if s.mode == "live" {
		fmt.Fprintf(w, "; %d goroutines re-read after changing, %d torn, %d running on no thread read, %d read calls, %d sudogs", s.reg.Retried, s.reg.Torn, s.late, s.reg.Calls, s.reg.Sudogs)
	}
	fmt.Fprintln(w)
}

func newReadStats(mode string) *readStats {
	return &readStats{mode: mode, start: time.Now(), cpu0: cpuTime()}
}

func (s *readStats) done() {
	s.read, s.cpu = time.Since(s.start), cpuTime()-s.cpu0
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// goroutineRead is what a goroutine command read of its target.
type goroutineRead struct {
	snap    *snapshot
	threads []stack.Thread
	set     *goroutineSet // nil unless every goroutine was asked for
	stats   *readStats
}

// readTarget reads the threads of the target and, if all is set, every
// goroutine. A core, or a live process with -stop, is read held still
// (withSnapshot); otherwise readLive reads it. cerr is an error of the
// goroutine read; werr a warning about the input (a truncated core),
// returned after the output.
func readTarget(ctx context.Context, ta targetArgs, all bool, stderr io.Writer) (r goroutineRead, cerr, werr error) {
	alive := ta.core == "" && !processGone(ta.pid)
	r, cerr, werr = readTargetOnce(ctx, ta, all, stderr)
	failed := cerr != nil || werr != nil || r.set != nil && r.set.torn > 0
	if failed && alive && processGone(ta.pid) {
		// What failed (or was left out) was a read of memory that went
		// away with the process: that is the one thing to report.
		return goroutineRead{stats: r.stats}, fmt.Errorf("process %d %w while it was read", ta.pid, errExited), nil
	}
	return r, cerr, werr
}

// errExited is a target process that exited (or is a zombie).
var errExited = opentarget.ErrExited

// readTargetOnce is readTarget but for a process that exits meanwhile.
func readTargetOnce(ctx context.Context, ta targetArgs, all bool, stderr io.Writer) (r goroutineRead, cerr, werr error) {
	if ta.core != "" || ta.stop || !all {
		r.stats = newReadStats("stopped")
		werr = withSnapshot(ctx, ta, false, stderr, r.stats, func(snap *snapshot) {
			r.snap, r.threads = snap, collect(snap)
			if all {
				r.set, cerr = collectGoroutines(snap, r.threads)
			}
		})
		r.stats.done()
		if r.set != nil {
			r.stats.gs = len(r.set.gs)
		}
		return r, cerr, werr
	}
	r, err := readLive(ctx, ta.pid)
	return r, err, nil
}

// readLive reads the threads and every goroutine of live process pid
// without holding it stopped.
func readLive(ctx context.Context, pid int) (goroutineRead, error) {
	var r goroutineRead
	p, err := lineage.OpenPID(ctx, pid, nil)
	if err != nil {
		return r, err
	}
	defer p.Close() // the read is done when readLive returns
	lineageraw.KeepRaw(p)
	// The executable stays open: the set symbolizes through it after the
	// read. The process exits soon after.
	exe, err := opentarget.OpenLiveExe(pid)
	if err != nil {
		return r, err
	}
	bin, bias := exe.Bin, p.LoadBias()
	abi, err := findABI(bin, false)
	if err != nil {
		bin.Close()
		return r, err
	}
	stack.Table(bin) // decoded before the read, not while a thread is stopped
	st := newReadStats("live")
	snap := &snapshot{ctx: ctx, bin: bin, bias: bias, mem: p, abi: abi, live: true}
	view, verr := abi.Load(p, bias)
	if verr == nil {
		view = view.WithContext(ctx)
		view.ReadLabels = true
	}
	reads, err := readThreadsEach(p, snap, view, verr, st)
	if err != nil {
		return r, err
	}
	atThread := map[uint64]*lineageabi.Goroutine{}
	for _, tr := range reads {
		snap.threads = append(snap.threads, tr.th)
		r.threads = append(r.threads, tr.thread(snap))
		if tr.g != nil {
			atThread[tr.g.Goid] = tr.g
		}
	}
	if verr != nil {
		return r, verr
	}
	set, err := readGoroutinesLive(p, snap, view.Note, r.threads, atThread, st)
	if err != nil {
		return r, err
	}
	st.done()
	st.gs = len(set.gs)
	return goroutineRead{snap: snap, threads: r.threads, set: set, stats: st}, nil
}

// readThreadsEach stops the threads of p one at a time, on the tracer
// thread, each only while its registers, stack and lineage record are
// copied, and records each stop in st.
func readThreadsEach(p *lineage.Process, snap *snapshot, view *lineageabi.View, verr error, st *readStats) ([]threadRead, error) {
	tids, err := p.ThreadIDs()
	if err != nil {
		return nil, err
	}
	var out []threadRead
	for _, tid := range tids {
		if err := snap.canceled(); err != nil {
			return out, err
		}
		var stopped int
		var since time.Time
		d, err := p.StopThread(snap.ctx, tid, func(s *lineage.Stopped) {
			stopped, since = len(s.Threads()), s.Since()
			tsnap := *snap
			tsnap.mem = s
			var v *lineageabi.View
			if view != nil {
				v = view.WithMem(s)
			}
			for _, th := range sdkThreads(s.Threads()) {
				out = append(out, readThread(&tsnap, v, verr, th))
			}
		})
		if d > 0 && !since.IsZero() {
			st.stops = append(st.stops, threadStop{tid: tid, threads: stopped, held: d, d: time.Since(since)})
		}
		if errors.Is(err, lineage.ErrThreadExited) {
			continue
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// readGoroutinesLive reads every goroutine of a running process with its
// stack, through the SDK's batch read (lineage.Process.GoroutineStacks),
// and merges the threads' view (threads, read before, and their goroutines
// as their g showed them then, by goid) into it.
func readGoroutinesLive(p *lineage.Process, snap *snapshot, note string, threads []stack.Thread, atThread map[uint64]*lineageabi.Goroutine, st *readStats) (*goroutineSet, error) {
	s, err := p.GoroutineStacks(snap.ctx)
	if err != nil {
		return nil, err
	}
	st.reg = lineageraw.Stats(s)
	gs := make([]lineageabi.Goroutine, 0, len(s.Goroutines))
	stacks := make([]*walked, 0, len(s.Goroutines))
	byStack := map[*lineage.Frame]*walked{} // goroutines parked alike share their frames
	for _, g := range s.Goroutines {
		raw, _ := lineageraw.Goroutine(g)
		gs = append(gs, *raw)
		var w *walked
		if len(g.Stack) > 0 {
			if w = byStack[&g.Stack[0]]; w == nil {
				f := elideWrappers(lineageraw.Locs(g.Stack))
				w = &walked{frames: f[:len(f):len(f)]}
				if e, ok := g.StackErr.(*lineage.StackEndError); ok {
					w.stop = e.Reason
				}
				byStack[&g.Stack[0]] = w
			}
		}
		stacks = append(stacks, w)
	}
	set := newGoroutineSet(snap, note, gs, stacks, threads, atThread, s.Torn)
	if err := snap.canceled(); err != nil {
		return nil, err
	}
	for _, g := range set.gs {
		if g.TID == 0 && g.Status == lineageabi.StatusRunning {
			st.late++
		}
	}
	return set, nil
}

// walked is a goroutine's stack as a read walked and symbolized it.
type walked struct {
	frames []stack.Loc
	stop   string // why the walk ended early
}

// newGoroutineSet builds the set of goroutines gs, in goid order (as the
// SDK gives them). stacks[i], if stacks is not nil, is the stack of gs[i]
// walked already from its saved registers (nil for one that was running);
// otherwise stacks are walked now from snap's memory. A goroutine on one of threads gets the thread's stack,
// whatever the registry said, but for one in a system call; and with the
// thread's stack, the state it had when the thread was read (atThread, by
// goid; nil when threads and registry were read at one instant), so that
// state and stack agree.
func newGoroutineSet(snap *snapshot, note string, gs []lineageabi.Goroutine, stacks []*walked, threads []stack.Thread, atThread map[uint64]*lineageabi.Goroutine, torn int) *goroutineSet {
	set := &goroutineSet{snap: snap, note: note, torn: torn, gs: make([]goroutine, 0, len(gs))}
	onThread := map[uint64]stack.Thread{}
	for _, t := range threads {
		if t.Goid != 0 {
			if _, ok := onThread[t.Goid]; !ok {
				onThread[t.Goid] = t
			}
		}
	}
	now := monotonicNow(snap)
	if now != 0 {
		set.monoNow, set.wallNow = now, time.Now().UnixNano()
	}
	sym := symbolizer{snap: snap, m: map[string][]stack.Loc{}}
	// In goid order; of two readings of one goroutine (a read of a running
	// process is not a snapshot), the first is kept.
	order := make([]int, len(gs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(gs[i].Goid, gs[j].Goid) })
	for k, i := range order {
		if snap.canceled() != nil {
			break // the caller returns the error
		}
		g := &gs[i]
		if k > 0 && gs[order[k-1]].Goid == g.Goid {
			continue
		}
		out := goroutine{Goroutine: g}
		t, onT := onThread[g.Goid]
		if onT {
			out.TID, out.Frames, out.Stop = t.TID, t.Frames, t.Stop
		}
		// A goroutine in a system call or cgo call is walked from where it
		// entered it, as the runtime's dump does, even while its thread runs.
		if !onT || g.Status == lineageabi.StatusSyscall {
			if stacks != nil {
				if w := stacks[i]; w != nil {
					out.Frames, out.Stop = w.frames, w.stop
				}
			} else if regs, ok := savedRegs(*g); ok {
				walk := stack.Unwind(snap.mem, snap.bin, snap.bias, regs)
				out.Frames, out.Stop = sym.frames(walk), walk.Stop
			}
		} else if tg := atThread[g.Goid]; tg != nil {
			out.Goroutine = tg
			g = tg
		}
		if g.Status == lineageabi.StatusWaiting && g.WaitSince > 0 && now > g.WaitSince {
			out.Wait = time.Duration(now - g.WaitSince)
		}
		set.gs = append(set.gs, out)
	}
	set.nameFromStacks()
	return set
}

// monotonicNow is the target's clock (CLOCK_MONOTONIC) for a live target,
// 0 for a core.
func monotonicNow(snap *snapshot) int64 {
	if !snap.live {
		return 0
	}
	return target.MonotonicNow()
}

// symbolizer symbolizes goroutine walks (wrappers elided), once per
// distinct walk: goroutines parked at the same place share their frames.
type symbolizer struct {
	snap *snapshot
	m    map[string][]stack.Loc
	key  []byte // scratch
}

func (s *symbolizer) frames(w stack.Walk) []stack.Loc {
	key := w.AppendKey(s.key[:0])
	s.key = key
	if l, ok := s.m[string(key)]; ok {
		return l
	}
	l := elideWrappers(stack.SymbolizeResumed(s.snap.bin, s.snap.bias, w))
	l = l[:len(l):len(l)] // shared: an append must copy
	s.m[string(key)] = l
	return l
}
