package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/lineageraw"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
	"fpsafe.dev/misc/lineage"
)

type profileFlags struct {
	hz         int
	duration   time.Duration
	out        string
	format     string
	collector  string
	native     bool
	running    bool
	stats      bool
	consistent bool
	wall       bool

	ctx            context.Context // sampling ends when it is done
	stdout, stderr io.Writer       // where the command writes
}

func profileFlagSet(fl *flag.FlagSet) func(*invocation) error {
	var pf profileFlags
	fl.IntVar(&pf.hz, "hz", 99, "samples per second (`N`)")
	fl.DurationVar(&pf.duration, "duration", 10*time.Second, "how long to sample (`D`)")
	fl.StringVar(&pf.out, "o", "", "output `FILE` (default golineage.pb.gz for pprof, standard output for folded and svg); written whole or not at all")
	fl.StringVar(&pf.format, "format", "pprof", "output format, `pprof|folded|svg`: pprof, folded stacks (flame-graph scripts) or an SVG flame graph")
	fl.StringVar(&pf.collector, "collector", "", "`ebpf|ptrace`: copy stacks in the kernel with a BPF program (ebpf; the default where the kernel allows it, else ptrace), or stop threads from user space (ptrace)")
	fl.BoolVar(&pf.native, "native", false, "native stacks only (allowed for binaries without the lineage ABI)")
	fl.BoolVar(&pf.running, "running", false, "keep only samples of threads that were running (a CPU profile)")
	fl.BoolVar(&pf.stats, "stats", false, "print per-sample stop times and the sampling loop's CPU time to standard error")
	fl.BoolVar(&pf.consistent, "consistent", false, "stop all threads together for each sample (a snapshot consistent across threads; costs the target more)")
	fl.BoolVar(&pf.wall, "wall", false, "wall-clock profile of every goroutine, running or not (from the goroutine registry, read with no thread stopped; with -consistent, all threads stop for each sample)")
	return func(inv *invocation) error {
		pf.ctx, pf.stdout, pf.stderr = inv.ctx, inv.stdout, inv.stderr
		return runProfile(inv, pf)
	}
}

func runProfile(inv *invocation, pf profileFlags) error {
	stderr := pf.stderr
	if len(inv.args) != 1 {
		return inv.usage("need exactly one PID")
	}
	if pf.hz <= 0 || pf.hz > 10000 {
		return inv.usage("-hz %d: want 1..10000", pf.hz)
	}
	if pf.duration <= 0 {
		return inv.usage("-duration must be positive")
	}
	if pf.format != "pprof" && pf.format != "folded" && pf.format != "svg" {
		return inv.usage("-format %q: want pprof, folded or svg", pf.format)
	}
	if pf.collector == "bpf" {
		return inv.usage("-collector bpf: the bpftrace collector was removed; the ebpf collector (-collector ebpf) samples in the kernel without bpftrace")
	}
	if pf.collector != "" && pf.collector != "ebpf" && pf.collector != "ptrace" {
		return inv.usage("-collector %q: want ebpf or ptrace", pf.collector)
	}
	if pf.wall && (pf.native || pf.running) {
		return inv.usage("-wall needs the lineage ABI; it cannot be combined with -native or -running")
	}
	if pf.consistent && pf.collector != "" && pf.collector != "ptrace" {
		return inv.usage("-consistent needs the ptrace collector")
	}
	pid, err := parsePID(inv.args[0])
	if err != nil {
		return err
	}
	// The output is opened before sampling, so that a path that cannot be
	// written fails now and not after the whole run.
	out, err := openOutput(pf)
	if err != nil {
		return err
	}
	defer out.abandon()
	t, err := openProfTarget(pf.ctx, pid, pf)
	if err != nil {
		return err
	}
	defer t.close()
	if pf.wall {
		if err := t.checkRegistry(); err != nil {
			return err
		}
	}
	b := pprofout.New(t.bin, t.bias, time.Second/time.Duration(pf.hz))
	b.Wall = pf.wall
	b.VDSO, _ = target.ReadVDSO(pid, t.p) // without one, its frames stay unnamed
	err = runCollector(t, pf, b)
	if errors.Is(err, context.Canceled) {
		err = nil // interrupted: what was sampled is written
	}
	if err != nil && b.Len() == 0 {
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "golineage: sampling ended early: %v (writing the %d samples taken)\n", err, b.Len())
	}
	return out.write(b, pf)
}

// profTarget is the process a profile samples: opened once, with its
// memory read and its threads stopped through p, and its executable file,
// which the samples are symbolized from.
type profTarget struct {
	p    *lineage.Process
	pid  int
	bin  *gobin.Binary
	bias uint64
	abi  *lineageabi.ABI // nil for native stacks only
}

// openProfTarget opens process pid for a profile: its stops skip the
// threads' scheduling states unless -running needs them.
func openProfTarget(ctx context.Context, pid int, pf profileFlags) (*profTarget, error) {
	p, err := lineage.OpenPID(ctx, pid, &lineage.Options{NoLineage: pf.native, NoLabels: true, FastStops: !pf.running})
	if err != nil {
		return nil, err
	}
	exe, err := opentarget.OpenLiveExe(pid)
	if err != nil {
		p.Close()
		return nil, err
	}
	abi, err := findABI(exe.Bin, pf.native)
	if err != nil {
		exe.Close()
		p.Close()
		return nil, err
	}
	lineageraw.KeepRaw(p) // wall-clock samples are made of the registry's readings
	return &profTarget{p: p, pid: pid, bin: exe.Bin, bias: p.LoadBias(), abi: abi}, nil
}

// checkRegistry refuses a wall-clock profile of a target that publishes no
// goroutine registry (GODEBUG=lineage=0): every tick would find no
// goroutine, and the profile would be empty. A runtime still starting up
// (its header not ready) is not refused.
func (t *profTarget) checkRegistry() error {
	v, err := t.abi.Load(t.p, t.bias)
	if err != nil {
		return err
	}
	if v.H.Flags&lineageabi.FlagReady != 0 && (v.Reg == nil || v.H.Flags&lineageabi.FlagRecords == 0) {
		return fmt.Errorf("process %d: -wall needs its goroutine registry: %w", t.pid, lineageabi.ErrNoRegistry)
	}
	return nil
}

func (t *profTarget) close() {
	t.bin.Close()
	t.p.Close()
}

// liveSnapshot is t read running, with no thread stopped.
func (t *profTarget) liveSnapshot() *snapshot {
	return &snapshot{bin: t.bin, bias: t.bias, mem: t.p, abi: t.abi, live: true}
}

// output is where a profile goes: a temporary file next to the -o path,
// created (and so checked) before sampling and renamed to it once the
// profile is written whole, or standard output. A run that fails leaves
// no file and an older one in place.
type output struct {
	path   string
	f      *os.File // the temporary file (or the device); nil for standard output
	device bool     // path is not a regular file (/dev/stdout, a FIFO): f is path itself
	done   bool
}

func openOutput(pf profileFlags) (*output, error) {
	o := &output{path: pf.out}
	if o.path == "" && pf.format == "pprof" {
		o.path = "golineage.pb.gz"
	}
	if o.path == "" || o.path == "-" {
		return o, nil
	}
	if st, err := os.Stat(o.path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("cannot write the profile (-o): %s is a directory", o.path)
	} else if err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(o.path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot write the profile (-o): %w", err)
		}
		o.f, o.device = f, true
		return o, nil
	}
	f, err := os.CreateTemp(filepath.Dir(o.path), "."+filepath.Base(o.path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("cannot write the profile (-o): %w", err)
	}
	o.f = f
	return o, nil
}

// abandon removes the temporary file of an output that was not written.
func (o *output) abandon() {
	if o.f == nil || o.done {
		return
	}
	o.f.Close()
	if !o.device {
		os.Remove(o.f.Name())
	}
}

func (o *output) write(b *pprofout.Builder, pf profileFlags) error {
	w := pf.stdout
	if o.f != nil {
		w = o.f
	}
	bw := bufio.NewWriter(w)
	var err error
	switch pf.format {
	case "folded":
		err = b.WriteFolded(bw)
	case "svg":
		err = b.WriteSVG(bw, b.Title)
	default:
		err = b.Profile().Write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if o.f == nil {
		return err
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && o.device {
		o.done = true
		return nil
	}
	if err == nil {
		err = os.Chmod(o.f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	if err != nil {
		return fmt.Errorf("writing the profile to %s: %w", o.path, err)
	}
	o.done = true
	fmt.Fprintf(pf.stderr, "golineage: wrote %d samples to %s\n", b.Len(), o.path)
	return nil
}

// samplePtrace stops the threads at each tick, one at a time (or, with
// -consistent, all together), copies their stacks and lineage, and
// resumes them before doing anything else (symbolization and output happen
// after sampling). The loop runs on the thread the stops are made from,
// so that a stop costs no hand-off between threads.
func samplePtrace(t *profTarget, pf profileFlags, b *pprofout.Builder) error {
	var loopErr error
	if err := t.p.OnTracerThread(func() { loopErr = samplePtraceLoop(t, pf, b) }); err != nil {
		return err // another tracer holds the process
	}
	return loopErr
}

func samplePtraceLoop(t *profTarget, pf profileFlags, b *pprofout.Builder) error {
	period := time.Second / time.Duration(pf.hz)
	deadline := time.Now().Add(pf.duration)
	var stops []time.Duration
	var threads threadCounts
	start, cpu0 := time.Now(), cpuTime()
	tc := tickCPU{cpu0: cpu0}
	defer func() {
		if pf.stats || len(stops) > 0 {
			reportStops(pf.stderr, stops)
		}
		if pf.stats && threads.samples > 0 {
			fmt.Fprintf(pf.stderr, "golineage: threads stopped per sample: mean %.1f of %.1f\n",
				float64(threads.stopped)/float64(threads.samples), float64(threads.listed)/float64(threads.samples))
		}
		if threads.slow > 0 {
			fmt.Fprintf(pf.stderr, "golineage: %d thread stops skipped: the thread did not stop within 2s\n", threads.slow)
		}
		if pf.stats {
			// What sampling itself costs the machine (not start-up or
			// writing the profile): CPU time of this process while it
			// sampled.
			d, cpu := time.Since(start), cpuTime()-cpu0
			fmt.Fprintf(pf.stderr, "golineage: sampling used %v of CPU time in %v (%.1f%% of one CPU)\n",
				cpu.Round(time.Millisecond), d.Round(time.Millisecond), 100*cpu.Seconds()/d.Seconds())
			tc.report(pf.stderr, cpu+cpu0)
		}
	}()
	if pf.stats {
		fmt.Fprintln(pf.stderr, "golineage: sampling started")
	}
	var parked wallParked
	defer parked.flush(b)
	next := time.Now()
	var last time.Time // the previous tick's start
	for time.Now().Before(deadline) && pf.ctx.Err() == nil {
		// A tick stands for the time since the previous one, more than
		// the period when it comes late (a loaded machine, a long stop).
		now := time.Now()
		if !last.IsZero() {
			b.SetTickWeight(now.Sub(last))
		}
		last = now
		var samples []pprofout.Sample
		var err error
		if pf.consistent {
			var stop time.Duration
			samples, stop, err = sampleStopped(t, pf)
			stops = append(stops, stop)
		} else {
			samples, err = sampleEach(pf.ctx, t, pf.running, pf.wall, &stops, &threads)
			if err == nil && pf.wall {
				// Threads one at a time, then the parked goroutines
				// with none stopped.
				samples = goroutineSamples(samples)
				parked.tick(pf.ctx, t, true, samples, b)
			}
		}
		if pf.ctx.Err() != nil {
			parked.drop()
			return nil // interrupted: this tick's samples may be partial
		}
		if err != nil {
			if processGone(t.pid) || errors.Is(err, target.ErrGone) {
				err = fmt.Errorf("process %d exited", t.pid)
			}
			return err
		}
		for _, s := range samples {
			b.Add(s)
		}
		tc.tick()
		next = next.Add(period)
		if d := time.Until(next); d > 0 {
			// A Go sleep, not a raw nanosleep on this thread: a
			// thread asleep in a system call holds its P, and the
			// runtime's monitor then wakes every 20µs to 10ms to take
			// it back, tick after tick, which costs more CPU than the
			// handoff back to this locked thread. Parked, the
			// goroutine leaves every P idle and the monitor asleep.
			time.Sleep(d)
		} else {
			next = time.Now() // fell behind: do not burst
		}
	}
	return nil
}

// sampleStopped takes one sample of every thread (and, with -wall, of
// every goroutine) with all the threads stopped together, and returns the
// stop time summed over the threads.
func sampleStopped(t *profTarget, pf profileFlags) ([]pprofout.Sample, time.Duration, error) {
	held, err := t.p.Stop(pf.ctx)
	if err != nil {
		return nil, 0, err
	}
	defer held.Resume()
	snap := &snapshot{ctx: pf.ctx, bin: t.bin, bias: t.bias, threads: sdkThreads(held.Threads()), mem: held, abi: t.abi}
	view := loadViewOrNil(snap)
	samples := sampleThreads(snap, view, pf.running)
	if pf.wall {
		samples = goroutineSamples(samples)
		samples = append(samples, sampleParked(snap, view, samples)...)
	}
	held.Resume()
	// Every thread was held for the whole window.
	return samples, held.Held() * time.Duration(len(snap.threads)), nil
}

// tickCPU keeps the CPU time after each of a sampling loop's first two
// ticks: the first reads every goroutine, the second may fault in buffers
// the first did not need, and the ticks after them are the profile's
// steady cost.
type tickCPU struct {
	cpu0  time.Duration // when the loop started
	first [2]time.Duration
	ticks int
}

func (tc *tickCPU) tick() {
	if tc.ticks < len(tc.first) {
		tc.first[tc.ticks] = cpuTime()
	}
	tc.ticks++
}

// report prints the CPU time of the first, the second and the later ticks
// (their mean), given the CPU time at the end.
func (tc *tickCPU) report(w io.Writer, end time.Duration) {
	if tc.ticks <= 2 {
		return
	}
	rest := (end - tc.first[1]) / time.Duration(tc.ticks-2)
	fmt.Fprintf(w, "golineage: CPU time per tick: first %v, second %v, then %v\n",
		(tc.first[0] - tc.cpu0).Round(10*time.Microsecond), (tc.first[1] - tc.first[0]).Round(10*time.Microsecond), rest.Round(10*time.Microsecond))
}

// sampleEach takes one sample of every thread, stopping one thread at a
// time: each thread is held only while its own registers, stack and lineage
// record are copied. The lineage header and registry are read first, with
// the process running (regions are never freed, and each region is read
// again, under its sequence counter, while its thread is stopped). With
// goroutinesOnly (a wall-clock profile, which keeps only the samples of
// threads running a goroutine), a thread whose region says it runs none is
// not stopped at all: the idle Ms of a busy server are most of its threads.
func sampleEach(ctx context.Context, t *profTarget, running, goroutinesOnly bool, stops *[]time.Duration, counts *threadCounts) ([]pprofout.Sample, error) {
	tids, err := t.p.ThreadIDs()
	if err != nil {
		return nil, err
	}
	var view *lineageabi.View
	if t.abi != nil {
		if view, _ = t.abi.Load(t.p, t.bias); view != nil {
			view = view.WithContext(ctx)
		}
	}
	var out []pprofout.Sample
	var total time.Duration
	for _, tid := range tids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if goroutinesOnly && view != nil && !view.RunsGoroutine(uint64(tid)) {
			continue
		}
		counts.stopped++
		d, err := t.p.StopThread(ctx, tid, func(s *lineage.Stopped) {
			snap := &snapshot{bin: t.bin, bias: t.bias, threads: sdkThreads(s.Threads()), mem: s}
			var v *lineageabi.View
			if view != nil {
				v = view.WithMem(s)
			}
			out = append(out, sampleThreads(snap, v, running)...)
		})
		total += d
		if errors.Is(err, lineage.ErrThreadExited) {
			continue
		}
		if errors.Is(err, lineage.ErrStopTimeout) {
			// Not fatal to a profile: this tick goes without that
			// thread (its time is the next tick's, which comes late).
			counts.slow++
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	*stops = append(*stops, total)
	counts.samples++
	counts.listed += len(tids)
	return out, nil
}

// threadCounts counts, over the samples sampleEach took, the threads it
// listed and the threads it stopped.
type threadCounts struct{ samples, listed, stopped, slow int }

func loadViewOrNil(snap *snapshot) *lineageabi.View {
	v, _ := loadView(snap) // a sample without lineage is still a sample
	if v != nil {
		v.ReadLabels = false // samples carry no labels
	}
	return v
}

// sampleThreads copies what a sample needs while the target is stopped.
func sampleThreads(snap *snapshot, view *lineageabi.View, runningOnly bool) []pprofout.Sample {
	var out []pprofout.Sample
	for _, th := range snap.threads {
		if runningOnly && th.State != "R" {
			continue
		}
		walk := stack.Unwind(snap.mem, snap.bin, snap.bias, th.Regs)
		s := pprofout.Sample{TID: th.TID, PCs: walk.PCs}
		if view != nil {
			if rec, err := view.Thread(uint64(th.TID)); err == nil && rec != nil {
				s.Goid, s.Lineage = rec.Goid, lineageabi.Chain(rec)
			}
		}
		out = append(out, s)
	}
	return out
}

// goroutineSamples keeps the samples of threads that run a goroutine: a
// wall-clock profile is of goroutines, not of idle threads.
func goroutineSamples(samples []pprofout.Sample) []pprofout.Sample {
	out := samples[:0]
	for _, s := range samples {
		if s.Goid != 0 {
			out = append(out, s)
		}
	}
	return out
}

// sampleParked samples every goroutine that is not on a thread (onThreads
// holds the samples of those that are), from the goroutine registry,
// walking each stack from its saved sched.bp (or its syscall state), while
// the target is stopped.
func sampleParked(snap *snapshot, view *lineageabi.View, onThreads []pprofout.Sample) []pprofout.Sample {
	if view == nil || view.Reg == nil {
		return nil
	}
	gs, _, err := view.Goroutines()
	if err != nil {
		return nil
	}
	sampled := sampledGoids(onThreads)
	var out []pprofout.Sample
	for _, g := range gs {
		if snap.canceled() != nil {
			return nil // the sampling loop ends
		}
		regs, ok := savedRegs(g)
		if !ok || sampled[g.Goid] {
			continue // running, or in a system call on its thread: sampled with the thread
		}
		out = append(out, parkedSample(g, stack.Unwind(snap.mem, snap.bin, snap.bias, regs)))
	}
	return out
}

// sampledGoids are the goroutines of samples.
func sampledGoids(samples []pprofout.Sample) map[uint64]bool {
	m := map[uint64]bool{}
	for _, s := range samples {
		m[s.Goid] = true
	}
	return m
}

// parkedSample is the sample of goroutine g, not on a thread, walked.
func parkedSample(g lineageabi.Goroutine, walk stack.Walk) pprofout.Sample {
	st := lineageabi.StatusName(g.Status)
	if g.WaitReason != "" {
		st = g.WaitReason
	}
	return pprofout.Sample{Goid: g.Goid, PCs: walk.PCs, Lineage: lineageabi.Chain(g.Record), State: st}
}

// wallParked counts, tick after tick, the parked goroutines of a
// wall-clock profile of a process that keeps running: the registry is read
// and the parked stacks walked with no thread stopped, through the SDK's
// Watcher. A goroutine that was parked at its last walk and has not run
// since is not walked again, and its sample stays the same: a tick costs
// the read of every record's change count and work for the goroutines that
// ran, or were not parked, only. A
// sample is added to the profile, once for all the ticks it was in, when
// it leaves the set or when sampling ends (flush), and stands for the time
// those ticks covered (the builder's tick weight at each tick: a tick that
// came late covers more than the period).
type wallParked struct {
	watch   *lineage.Watcher
	sampled map[*lineage.Goroutine]*pprofout.Sample // the set's goroutines, as Changes returned them
	since   map[*pprofout.Sample]int                // the set: the tick each sample joined it
	byGoid  map[uint64]*pprofout.Sample             // the set by goroutine
	onCPU   map[*pprofout.Sample]int                // ticks a sample in the set was sampled on a thread too
	onCPUd  map[*pprofout.Sample]time.Duration      // and the time those ticks covered
	missed  []int                                   // ticks whose read failed (ascending): counted for none
	ticks   int
	covered []time.Duration // covered[t]: the time ticks 1 to t covered, summed
}

// span is the time ticks a to b-1 covered; a tick the builder did not
// weigh (tests that make the set by hand) covers b's period.
func (w *wallParked) span(a, b int, bu *pprofout.Builder) time.Duration {
	if a >= b {
		return 0
	}
	if b-1 < len(w.covered) && a >= 1 {
		return w.covered[b-1] - w.covered[a-1]
	}
	return time.Duration(b-a) * bu.TickWeight()
}

// tick reads the parked goroutines of t once (readable false: the
// caller found no registry to read this tick, which then counts for
// none, as does a tick whose read fails). onThreads are the samples of the goroutines sampled on a thread
// this tick, which a parked sample of the same goroutine must not count
// twice.
func (w *wallParked) tick(ctx context.Context, t *profTarget, readable bool, onThreads []pprofout.Sample, b *pprofout.Builder) {
	if w.since == nil {
		w.since, w.byGoid, w.onCPU = map[*pprofout.Sample]int{}, map[uint64]*pprofout.Sample{}, map[*pprofout.Sample]int{}
		w.onCPUd = map[*pprofout.Sample]time.Duration{}
		w.sampled = map[*lineage.Goroutine]*pprofout.Sample{}
	}
	w.ticks++
	tk := w.ticks
	if len(w.covered) == 0 {
		w.covered = []time.Duration{0}
	}
	w.covered = append(w.covered, w.covered[len(w.covered)-1]+b.TickWeight())
	if !readable {
		w.missed = append(w.missed, tk)
		return
	}
	var err error
	if w.watch == nil {
		w.watch, err = t.p.Watch()
	}
	var gone, added []*lineage.Goroutine
	if err == nil {
		gone, added, err = w.watch.Changes(ctx)
	}
	for _, g := range gone {
		if s := w.sampled[g]; s != nil {
			delete(w.sampled, g)
			w.close(s, tk, b)
		}
	}
	for _, g := range added {
		raw, walk := lineageraw.Goroutine(g)
		if raw == nil || walk == nil {
			continue // on a thread: sampled there
		}
		s := parkedSample(*raw, *walk)
		w.sampled[g] = &s
		w.since[&s], w.byGoid[s.Goid] = tk, &s
	}
	if err != nil || ctx.Err() != nil {
		w.missed = append(w.missed, tk) // this tick's set may be partial
		return
	}
	for _, s := range onThreads {
		if p := w.byGoid[s.Goid]; p != nil {
			w.onCPU[p]++
			w.onCPUd[p] += b.TickWeight()
		}
	}
}

// drop leaves the last tick out (its thread samples were dropped).
func (w *wallParked) drop() {
	if w.ticks > 0 && (len(w.missed) == 0 || w.missed[len(w.missed)-1] != w.ticks) {
		w.missed = append(w.missed, w.ticks)
	}
}

// close adds sample s, which leaves the set at tick t, for the ticks it
// was in.
func (w *wallParked) close(s *pprofout.Sample, t int, b *pprofout.Builder) {
	from, ok := w.since[s]
	if !ok {
		return
	}
	lo, _ := slices.BinarySearch(w.missed, from)
	hi, _ := slices.BinarySearch(w.missed, t)
	if n := t - from - (hi - lo) - w.onCPU[s]; n > 0 {
		d := w.span(from, t, b) - w.onCPUd[s]
		for _, m := range w.missed[lo:hi] {
			d -= w.span(m, m+1, b)
		}
		b.AddSharedN(s, int64(n), d)
	}
	delete(w.since, s)
	delete(w.onCPU, s)
	delete(w.onCPUd, s)
	if w.byGoid[s.Goid] == s {
		delete(w.byGoid, s.Goid)
	}
}

// flush adds every sample still in the set, for the ticks so far.
func (w *wallParked) flush(b *pprofout.Builder) {
	for s := range w.since {
		w.close(s, w.ticks+1, b)
	}
}

// processGone reports whether process pid has exited (a zombie counts as
// exited: it runs nothing and has no memory left to read).
func processGone(pid int) bool {
	s := procState(pid)
	return s == 0 || s == 'Z' || s == 'X'
}

// procState is process pid's state letter (/proc/PID/stat: R, S, Z...),
// 0 if it has none (no such process).
func procState(pid int) byte {
	if s := target.ProcState(pid); s != "" {
		return s[0]
	}
	return 0
}

func reportStops(stderr io.Writer, stops []time.Duration) {
	if len(stops) == 0 {
		return
	}
	s := append([]time.Duration(nil), stops...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	fmt.Fprintf(stderr, "golineage: %d samples; thread stop time per sample (summed over threads): mean %v, median %v, p99 %v, max %v\n",
		len(s), sum/time.Duration(len(s)), s[len(s)/2], s[len(s)*99/100], s[len(s)-1])
}
