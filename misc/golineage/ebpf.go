package main

// The ebpf collector: a BPF program on a cpu-clock perf event of every CPU
// copies, for each sample of one of the target's threads, its user stack
// (walked by frame pointers), the registers and words the innermost-frame
// repair needs, and its goroutine's lineage record (internal/ebpf). No
// thread of the target is ever stopped: with -wall, the goroutines that are
// not running are read from the registry as the ptrace collector reads
// them between its thread stops (wallParked), and the running ones
// are those the program sampled since the previous tick.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"fpsafe.dev/misc/golineage/internal/agent"
	"fpsafe.dev/misc/golineage/internal/ebpf"
	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

// btfEnv names the kernel BTF the ebpf collector loads against (default
// /sys/kernel/btf/vmlinux); tests point it elsewhere to play a kernel
// without BTF.
const btfEnv = "GOLINEAGE_KERNEL_BTF"

// runCollector runs the collector pf selects and prints, on one line, which one
// ran; the default is ebpf where this kernel and process allow it, else
// ptrace with the reason.
func runCollector(t *profTarget, pf profileFlags, b *pprofout.Builder) error {
	name, why := chooseCollector(pf, t.bin.Arch, func() error { return ebpf.CheckPrivileges(os.Getenv(btfEnv)) })
	var run *ebpfRun
	if name == "ebpf" {
		var err error
		run, err = openEBPF(t, pf)
		switch {
		case err != nil && pf.collector == "" && errors.Is(err, ebpf.ErrUnavailable):
			name, why = "ptrace", err.Error()
		case err != nil:
			return err
		default:
			defer run.close()
			why = run.note
		}
	}
	if why != "" {
		fmt.Fprintf(pf.stderr, "golineage: collector %s (%s)\n", name, why)
	} else {
		fmt.Fprintf(pf.stderr, "golineage: collector %s\n", name)
	}
	b.Title = fmt.Sprintf("golineage profile of %s (pid %d), %d Hz, %s collector", filepath.Base(t.bin.Path), t.pid, pf.hz, name)
	switch name {
	case "ebpf":
		return run.sample(pf, b)
	}
	return samplePtrace(t, pf, b)
}

// chooseCollector returns the collector to run and, for a default that is
// not ebpf, why not. ebpfUsable checks the kernel and privileges.
func chooseCollector(pf profileFlags, arch string, ebpfUsable func() error) (name, why string) {
	if pf.collector != "" {
		return pf.collector, ""
	}
	switch {
	case pf.consistent:
		return "ptrace", "-consistent stops the threads"
	case arch != "amd64":
		return "ptrace", fmt.Sprintf("%v: it supports amd64 only, the executable is %s", ebpf.ErrUnavailable, arch)
	}
	if err := ebpfUsable(); err != nil {
		return "ptrace", err.Error()
	}
	return "ebpf", ""
}

// ebpfRun is a loaded and attached ebpf collector.
type ebpfRun struct {
	t    *profTarget
	tids *target.NSTIDs // the threads' ids in the target's PID namespace
	c    *ebpf.Collector
	view *lineageabi.View // nil without lineage
	note string           // why samples have no lineage, if they cannot

	torn, otherThread, malformed int // samples left without lineage, by why

	// -wall: each goroutine's latest on-CPU sample and the tick it came in,
	// for a goroutine that runs on a thread at a tick without a sample of
	// its own (its thread was off the CPU: see wallTick).
	lastOnCPU map[uint64]lastSample
	ticks     int
	stale     int // running goroutines counted without a sample of the tick
}

type lastSample struct {
	s    pprofout.Sample
	tick int
}

// lastOnCPUTicks is how long a goroutine's on-CPU sample stands in for it:
// after that, a running goroutine that had none since is counted by its
// start function alone.
const lastOnCPUTicks = 100

func openEBPF(t *profTarget, pf profileFlags) (*ebpfRun, error) {
	if t.bin.Arch != "amd64" {
		// The program reads amd64's thread pointer and registers.
		return nil, fmt.Errorf("%w: it supports amd64 only, the executable is %s", ebpf.ErrUnavailable, t.bin.Arch)
	}
	cfg := ebpf.Config{Hz: pf.hz, BTF: os.Getenv(btfEnv), Stats: pf.stats}
	var tc ebpf.Target
	r := &ebpfRun{t: t, tids: target.NewNSTIDs(t.pid)}
	if abi := t.abi; abi != nil {
		// The offsets are the executable file's (the ABI puts them there
		// at link time); only the run-time fields (flags, tls_g_offset,
		// record_size) are read from the process, running: they are
		// written once, before any goroutine.
		v, err := abi.Load(t.p, t.bias)
		if err != nil {
			return nil, err
		}
		r.view, r.note = v, v.Note
		tc = agent.Target(abi.Static, v.H)
	}
	c, err := ebpf.Open(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.AddTarget(t.pid, tc); err != nil {
		c.Close()
		return nil, err
	}
	r.c = c
	return r, nil
}

func (r *ebpfRun) close() { r.c.Close() }

// ebpfPoll is how often the reader takes the events the program wrote and
// checks that the target still runs and that it was not interrupted. It
// sleeps in between rather than wait in epoll: a thread blocked in a
// system call holds its P, and the runtime's monitor then wakes every 20µs
// to 10ms to take it back, which cost more CPU than the reads (the ring
// buffer holds far more than ebpfPoll's events).
const ebpfPoll = 50 * time.Millisecond

// sample reads the program's events until the duration ends, the target
// exits or the command is interrupted. With -wall, each tick adds the
// running goroutines sampled since the previous tick and every parked one.
func (r *ebpfRun) sample(pf profileFlags, b *pprofout.Builder) error {
	start, cpu0 := time.Now(), cpuTime()
	deadline := start.Add(pf.duration)
	period := time.Second / time.Duration(pf.hz)
	nextTick := start.Add(period)
	var lastTick time.Time // the previous wall tick
	var (
		running = map[uint64]pprofout.Sample{} // -wall: the latest sample of each goroutine this tick
		parked  wallParked
		events  int
		tc      = tickCPU{cpu0: cpu0}
	)
	defer parked.flush(b)
	exited, closeWatch := exitWatch(r.t.pid)
	defer closeWatch()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if pf.stats {
		fmt.Fprintln(pf.stderr, "golineage: sampling started")
	}
	defer func() {
		if pf.stats {
			d, cpu := time.Since(start), cpuTime()-cpu0
			runs, inBPF := r.c.RunTime()
			perRun := time.Duration(0)
			if runs > 0 {
				perRun = inBPF / time.Duration(runs)
			}
			fmt.Fprintf(pf.stderr, "golineage: ebpf: %d samples (without lineage: %d torn, %d of another thread, %d malformed; %d lost to a full ring buffer), %d wall-clock ticks (%d running goroutines counted without a sample of their tick); the program ran %d times for %v (%v each, all CPUs' samples; the target's own samples ran it in their time)\n",
				events, r.torn, r.otherThread, r.malformed, r.c.Lost(), tc.ticks, r.stale, runs, inBPF.Round(time.Microsecond), perRun)
			fmt.Fprintf(pf.stderr, "golineage: sampling used %v of CPU time in %v (%.1f%% of one CPU)\n",
				cpu.Round(time.Millisecond), d.Round(time.Millisecond), 100*cpu.Seconds()/d.Seconds())
			if pf.wall {
				tc.report(pf.stderr, cpu+cpu0)
			}
		}
	}()
	for {
		now := time.Now()
		if interrupted.Load() || !now.Before(deadline) {
			return nil
		}
		if exited() {
			return fmt.Errorf("process %d exited", r.t.pid)
		}
		// What the program wrote so far, without waiting.
		for {
			e, err := r.c.Read(now)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return fmt.Errorf("ebpf collector: reading samples: %w", err)
			}
			events++
			s := r.eventSample(e)
			if !pf.wall {
				b.Add(s)
			} else if s.Goid != 0 {
				running[s.Goid] = s
			}
		}
		if pf.wall && !now.Before(nextTick) {
			// A tick stands for the time since the previous one.
			if !lastTick.IsZero() {
				b.SetTickWeight(now.Sub(lastTick))
			}
			lastTick = now
			r.wallTick(pf.ctx, &parked, running, b)
			clear(running)
			tc.tick()
			nextTick = nextTick.Add(period)
			if nextTick.Before(now) {
				nextTick = now.Add(period) // fell behind: do not burst
			}
		}
		// -wall reads the events at its ticks, or every 2*ebpfPoll if they
		// are further apart (10 Hz: one wake-up per tick).
		wake := earliest(deadline, now.Add(ebpfPoll))
		if pf.wall {
			wake = earliest(deadline, earliest(nextTick, now.Add(2*ebpfPoll)))
		}
		timer.Reset(time.Until(wake))
		select {
		case <-timer.C:
		case <-pf.ctx.Done():
		}
	}
}

// exitWatch returns a check that process pid has exited (a zombie
// counts), cheaper than processGone where the kernel has pidfds: a poll of
// the process's pidfd rather than a read of its stat file, which sums
// every thread's times. close releases the pidfd.
func exitWatch(pid int) (exited func() bool, close func()) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return func() bool { return processGone(pid) }, func() {}
	}
	return func() bool {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(p, 0)
			if err != nil {
				return processGone(pid)
			}
			return n > 0
		}, func() {
			unix.Close(fd)
		}
}

// wallTick adds one wall-clock tick: the goroutines sampled running since
// the previous tick, then every other goroutine, read from the registry
// with no thread stopped.
//
// A wall-clock profile counts every goroutine at every tick. The program
// samples a thread only while it is on a CPU, at -hz, so a goroutine that
// runs on a thread the kernel kept off the CPU since the previous tick
// (more runnable threads than CPUs) has no sample of this tick. Such a
// goroutine, found by the regions (its thread's current goroutine, whose g
// says running), is counted with its latest on-CPU sample of the last
// lastOnCPUTicks ticks, or else by its start function and lineage, with
// the state "running (not sampled)", as the ptrace collector, which stops
// every thread that runs a goroutine, would count it.
func (r *ebpfRun) wallTick(ctx context.Context, parked *wallParked, running map[uint64]pprofout.Sample, b *pprofout.Builder) {
	r.ticks++
	if r.lastOnCPU == nil {
		r.lastOnCPU = map[uint64]lastSample{}
	}
	var onCPU []pprofout.Sample
	for goid, s := range running {
		onCPU = append(onCPU, s)
		b.Add(s)
		r.lastOnCPU[goid] = lastSample{s, r.ticks}
	}
	snap := r.t.liveSnapshot()
	view := loadViewOrNil(snap) // one read of the header and regions per tick
	if view != nil {
		for _, tid := range view.Threads() {
			rec, g, err := view.ThreadGoroutine(tid)
			if err != nil || rec == nil || g == nil || g.Status != lineageabi.StatusRunning {
				continue
			}
			if _, ok := running[rec.Goid]; ok {
				continue
			}
			s := pprofout.Sample{TID: int(tid), Goid: rec.Goid, PCs: []uint64{rec.StartPC}, Lineage: lineageabi.Chain(rec), State: "running (not sampled)"}
			if l, ok := r.lastOnCPU[rec.Goid]; ok && r.ticks-l.tick <= lastOnCPUTicks {
				s = l.s
			}
			r.stale++
			onCPU = append(onCPU, s)
			b.Add(s)
		}
	}
	for goid, l := range r.lastOnCPU {
		if r.ticks-l.tick > lastOnCPUTicks {
			delete(r.lastOnCPU, goid)
		}
	}
	parked.tick(ctx, r.t, view != nil && view.Reg != nil, onCPU, b)
}

// eventSample turns an event into a sample: the innermost frame repaired
// as the bpf collector does, and the lineage stitched. A sample whose
// lineage copy is not whole keeps its stack and is counted.
func (r *ebpfRun) eventSample(e *ebpf.Event) pprofout.Sample {
	s := pprofout.Sample{TID: int(e.TID), PCs: e.Walk(r.t.bin, r.t.bias)}
	if r.view == nil {
		return s
	}
	goid, chain, err := e.Lineage(r.view.H, r.tids.Of(int(e.TID)))
	switch {
	case errors.Is(err, lineageabi.ErrTorn):
		r.torn++
	case errors.Is(err, ebpf.ErrOtherThread):
		r.otherThread++
	case err != nil:
		r.malformed++
	default:
		s.Goid, s.Lineage = goid, chain
	}
	return s
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
