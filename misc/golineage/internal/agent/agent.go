// Package agent is golineage's node agent: it profiles every process of
// the machine that runs a Go program built with the lineage ABI,
// continuously, and hands each process's profile of each interval to a
// sink (pprof files, OTLP).
//
// One BPF program and one cpu-clock perf event per CPU serve every target
// (ebpf.Collector with a map of targets): the agent never stops a process
// and never attaches to one. It learns of processes from the kernel, not
// by polling /proc: a scan at start, then the exec and exit tracepoints.
// An exec'd process's runtime has not published its lineage header yet, so
// a new Go program waits in a pending list, tried again every pendingRetry
// until its header is ready (or pendingGiveUp passes). Processes in other
// PID and mount namespaces are found the same way: the kernel names them by
// their PID in the initial namespace, and their executables are read
// through /proc/PID/exe.
//
// An executable is opened, and its symbols read, once (exeCache): the
// processes of one binary share it. Each target's samples go to a
// pprofout.Builder, which stitches the lineage below each goroutine's root
// frame as golineage profile does; at each interval the builders become
// profiles and start again.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"fpsafe.dev/misc/golineage/internal/ebpf"
	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

// Config says what the agent samples and how often it reports.
type Config struct {
	// Hz is how many on-CPU samples a second each CPU takes (19 if 0): a
	// prime, so that sampling does not beat with periodic work.
	Hz int
	// Interval is how much time each profile covers (10s if 0).
	Interval time.Duration
	// Upstream also profiles Go programs built without the lineage ABI
	// (an upstream toolchain): on-CPU stacks, without lineage. Otherwise
	// they are skipped and counted.
	Upstream bool
	// BTF is the kernel's BTF file ("" for ebpf.DefaultBTF).
	BTF string
	// Parked is how often each target's parked goroutines are read for
	// its off-CPU profile (DefaultParked if 0; negative: never).
	Parked time.Duration
	// Log receives a line for each process the agent starts or stops
	// profiling, and its errors; nil discards them.
	Log io.Writer
}

// DefaultHz and DefaultInterval are Config's defaults.
const (
	DefaultHz       = 19
	DefaultInterval = 10 * time.Second
	DefaultParked   = 10 * time.Second
)

// Process describes a profiled process: the resource its profiles come
// from.
type Process struct {
	PID         int    // in the initial PID namespace (the host's /proc)
	ServiceName string // OTEL_SERVICE_NAME in its environment, else ExeName
	ExeName     string // the base name of ExePath
	ExePath     string // its executable, as the process's mount namespace names it
	GoVersion   string // the toolchain that built it (from its build info)
	GNUBuildID  string // its executable's GNU build ID, hex ("" if none)
	GoBuildID   string // its executable's Go build ID ("" if none)
	ContainerID string // the container it runs in, from its cgroup ("" if none)
	Lineage     bool   // its executable publishes the lineage ABI
}

// A Profile is one process's samples of one interval.
type Profile struct {
	Process *Process
	Profile *profile.Profile
	// Final is set on the last profile of a process: it exited, or the
	// agent stopped.
	Final bool
	// OffCPU marks the profile of its parked goroutines (Config.Parked);
	// else it is the on-CPU profile.
	OffCPU bool
}

// A Sink receives each interval's profiles. It runs on the agent's
// sampling loop, so it must not block: an exporter queues (and bounds)
// what it sends.
type Sink interface {
	Export(ps []Profile)
}

// Stats counts what the agent did since it started.
type Stats struct {
	Samples      uint64 // samples read
	Lost         uint64 // samples the kernel dropped (a full ring buffer)
	Unattributed uint64 // samples of processes no longer known
	Profiles     uint64 // profiles handed to the sink
	Targets      int    // processes profiled now
	Started      uint64 // processes the agent started profiling
	Exited       uint64 // targets that exited
	Upstream     uint64 // Go programs without the lineage ABI, skipped (or profiled with Config.Upstream)
	NotGo        uint64 // processes of other programs, skipped
	Failed       uint64 // processes that could not be opened (gone, no permission, bad header)
	Torn         uint64 // samples left without lineage: a copy torn by a concurrent update
	Malformed    uint64 // samples left without lineage: a record that did not decode
	NoLabels     uint64 // samples whose goroutine's label set could not be read
	ParkedReads  uint64 // reads of a target's parked goroutines (Config.Parked)
	ParkedSlow   uint64 // reads that ran out of time (the process's next waits longer)
	ParkedFailed uint64 // targets whose parked goroutines could not be read (their off-CPU profile stopped)
}

// Agent is a running node agent.
type Agent struct {
	cfg     Config
	sink    Sink
	c       *ebpf.Collector
	exes    *exeCache
	procs   map[int]*proc
	pending map[int]time.Time // exec'd Go programs whose header is not ready, and when they were first seen
	self    int
	host    string
	stats   Stats
	period  time.Duration
	closed  bool          // Run returned: the collector is closed
	parked  *parkedReader // nil without off-CPU profiles (Config.Parked < 0)

	exportMu sync.Mutex    // serializes the sink's calls: the loop's and the parked reader's
	profiles atomic.Uint64 // profiles handed to the sink

	published atomic.Pointer[Stats] // Stats as of the loop's last turn, for Published
}

// proc is one target.
type proc struct {
	info *Process
	exe  *exe
	bias uint64
	h    *lineageabi.Header // nil without lineage
	tids *target.NSTIDs     // the threads' ids in the process's PID namespace
	vdso *target.VDSO
	b    *pprofout.Builder
	mem  target.Mem
	reg  *lineageabi.Registry // its label layout; nil without lineage
	// labels are the label sets read in this drain, by address: a set is
	// not changed once made, but its memory may be another's once freed,
	// so what was read is kept for one drain only.
	labels map[uint64][]lineageabi.Label
}

const (
	// The loop reads the ring buffer every poll: it sleeps in between
	// rather than block in epoll (see golineage's ebpfPoll). poll is a
	// quarter of the time the ring buffer takes to fill at the sampling
	// rate of every CPU, between minPoll and maxPoll: each wake-up costs
	// the agent (and the Go scheduler's monitor, which sleeps longer the
	// fewer timers there are), so an idle machine's agent wakes 4 times a
	// second.
	minPoll, maxPoll = 20 * time.Millisecond, 250 * time.Millisecond
	// pendingRetry is how often a starting process's header is tried
	// again, and pendingGiveUp how long it may take to become ready.
	pendingRetry  = 100 * time.Millisecond
	pendingGiveUp = 30 * time.Second
)

// New loads the BPF program and attaches it; Run samples. An error
// wrapping ebpf.ErrUnavailable says the kernel or the privileges do not
// allow it.
func New(cfg Config, sink Sink) (*Agent, error) {
	if cfg.Hz == 0 {
		cfg.Hz = DefaultHz
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Parked == 0 {
		cfg.Parked = DefaultParked
	}
	if cfg.Hz < 0 || cfg.Hz > 10000 {
		return nil, fmt.Errorf("agent: sampling rate %d Hz (want 1 to 10000)", cfg.Hz)
	}
	if cfg.Interval < 100*time.Millisecond {
		return nil, fmt.Errorf("agent: interval %v (want at least 100ms)", cfg.Interval)
	}
	if cfg.Parked > 0 && cfg.Parked < 10*time.Millisecond {
		return nil, fmt.Errorf("agent: parked goroutines every %v (want at least 10ms)", cfg.Parked)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	c, err := ebpf.Open(ebpf.Config{Hz: cfg.Hz, BTF: cfg.BTF, Procs: true})
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	a := &Agent{cfg: cfg, sink: sink, c: c, exes: newExeCache(cfg.Upstream), procs: map[int]*proc{}, pending: map[int]time.Time{},
		self: os.Getpid(), host: host, period: time.Second / time.Duration(cfg.Hz)}
	if cfg.Parked > 0 {
		a.parked = newParkedReader(a)
	}
	return a, nil
}

// Stats returns the agent's counts. It must be called from the goroutine
// that runs Run, or after Run returned (Config.Log's lines report them too).
func (a *Agent) Stats() Stats {
	st := a.stats
	st.Targets = len(a.procs)
	st.Profiles = a.profiles.Load()
	if r := a.parked; r != nil {
		st.ParkedReads, st.ParkedSlow, st.ParkedFailed = r.reads.Load(), r.slow.Load(), r.failed.Load()
	}
	if !a.closed {
		st.Lost = a.c.Lost()
	}
	return st
}

// Published returns the counts as of the sampling loop's last turn (at
// most a poll old); unlike Stats, any goroutine may call it.
func (a *Agent) Published() Stats {
	if st := a.published.Load(); st != nil {
		return *st
	}
	return Stats{}
}

func (a *Agent) publish() {
	st := a.Stats()
	a.published.Store(&st)
}

// Run samples until ctx is done, then hands every target's last profile
// to the sink and detaches: nothing stays attached once it returns.
func (a *Agent) Run(ctx context.Context) error {
	defer func() {
		a.stats.Lost = a.c.Lost()
		a.closed = true
		a.c.Close()
		a.publish()
	}()
	// The executables' tables are mapped (gobin.OpenMapped): a file
	// truncated after its last process exited faults, and guard turns that
	// into an error about that process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if a.parked != nil {
		go a.parked.run(ctx)
	}
	a.scan()
	next := time.Now().Add(a.cfg.Interval)
	retry := time.Now().Add(pendingRetry)
	poll := pollInterval(a.cfg.Hz, runtime.NumCPU())
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		now := time.Now()
		if err := a.drain(now); err != nil {
			a.flush(true)
			return err
		}
		if len(a.pending) > 0 && !now.Before(retry) {
			a.retryPending(now)
			retry = now.Add(pendingRetry)
		}
		if !now.Before(next) {
			a.flush(false)
			next = next.Add(a.cfg.Interval)
			if next.Before(now) {
				next = now.Add(a.cfg.Interval)
			}
		}
		if ctx.Err() != nil {
			a.flush(true)
			return nil
		}
		a.publish()
		timer.Reset(poll)
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
}

// pollInterval is the loop's period for hz samples a second on each of
// ncpu CPUs.
func pollInterval(hz, ncpu int) time.Duration {
	fill := time.Duration(ebpf.RingEvents) * time.Second / time.Duration(hz*ncpu)
	return min(max(fill/4, minPoll), maxPoll)
}

// drain handles the events the program wrote up to now, without waiting.
func (a *Agent) drain(now time.Time) error {
	for _, p := range a.procs {
		clear(p.labels)
	}
	for {
		e, err := a.c.Read(now)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("agent: reading the ring buffer: %w", err)
		}
		switch {
		case e.Flags&ebpf.FlagExec != 0:
			a.exec(int(e.TGID))
		case e.Flags&ebpf.FlagExit != 0:
			a.exit(int(e.TGID))
		default:
			a.sample(e)
		}
	}
}

// sample adds a sample to its process's profile.
func (a *Agent) sample(e *ebpf.Event) {
	a.stats.Samples++
	p := a.procs[int(e.TGID)]
	if p == nil {
		a.stats.Unattributed++ // removed while the event was in the ring
		return
	}
	var s pprofout.Sample
	if err := guard(func() { s = pprofout.Sample{TID: int(e.TID), PCs: e.Walk(p.exe.bin, p.bias)} }); err != nil {
		a.stats.Malformed++
		return
	}
	if p.h != nil {
		goid, chain, err := e.Lineage(p.h, p.tids.Of(int(e.TID)))
		switch {
		case errors.Is(err, lineageabi.ErrTorn), errors.Is(err, ebpf.ErrOtherThread):
			a.stats.Torn++
		case err != nil:
			a.stats.Malformed++
		default:
			s.Goid, s.Lineage = goid, chain
			s.Labels = a.labelSet(p, e.Labels)
		}
	}
	p.b.Add(s)
}

// labelSet returns the pprof labels of the label set at addr (a g.labels
// the program read with a sample's record) of target p.
func (a *Agent) labelSet(p *proc, addr uint64) []lineageabi.Label {
	if addr == 0 || p.reg == nil {
		return nil
	}
	if ls, ok := p.labels[addr]; ok {
		return ls
	}
	ls, err := p.reg.ReadLabels(p.mem, addr)
	if err != nil {
		a.stats.NoLabels++ // freed and reused, or the process is exiting
		ls = nil
	}
	if p.labels == nil {
		p.labels = map[uint64][]lineageabi.Label{}
	}
	p.labels[addr] = ls
	return ls
}

// scan considers every process running when the agent starts.
func (a *Agent) scan() {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Fprintf(a.cfg.Log, "golineage agent: listing processes: %v\n", err)
		return
	}
	for _, ent := range ents {
		if pid, err := strconv.Atoi(ent.Name()); err == nil {
			a.consider(pid, time.Now())
		}
	}
}

// exec considers a process that exec'd: a target that exec'd another
// program is a new process as far as its profiles go.
func (a *Agent) exec(pid int) {
	if _, ok := a.procs[pid]; ok {
		a.stop(pid, "exec'd another program")
	}
	delete(a.pending, pid)
	a.consider(pid, time.Now())
}

// exit stops profiling a target that exited.
func (a *Agent) exit(pid int) {
	delete(a.pending, pid)
	if _, ok := a.procs[pid]; ok {
		a.stats.Exited++
		a.stop(pid, "exited")
	}
}

// stop hands a target's last profile to the sink and forgets it.
func (a *Agent) stop(pid int, why string) {
	p := a.procs[pid]
	if err := a.c.RemoveTarget(pid); err != nil {
		fmt.Fprintf(a.cfg.Log, "golineage agent: %v\n", err)
	}
	var out []Profile
	if prof := a.profile(p); prof != nil {
		out = append(out, Profile{Process: p.info, Profile: prof, Final: true})
	}
	if len(out) > 0 {
		a.export(out)
	}
	if a.parked != nil && p.h != nil {
		a.parked.cmds <- parkedCmd{stop: pid}
	}
	delete(a.procs, pid)
	a.exes.release(p.exe)
	fmt.Fprintf(a.cfg.Log, "golineage agent: process %d (%s) %s\n", pid, p.info.ServiceName, why)
}

// retryPending tries again the starting processes whose header was not
// ready.
func (a *Agent) retryPending(now time.Time) {
	for pid, since := range a.pending {
		delete(a.pending, pid)
		if now.Sub(since) > pendingGiveUp {
			a.stats.Failed++
			fmt.Fprintf(a.cfg.Log, "golineage agent: process %d: its lineage header was not ready after %v; not profiled\n", pid, pendingGiveUp)
			continue
		}
		a.consider(pid, since)
	}
}

// consider starts profiling process pid if its executable is a Go program
// to profile; since is when the agent first saw it.
func (a *Agent) consider(pid int, since time.Time) {
	if pid == a.self || a.procs[pid] != nil {
		return
	}
	x, err := a.exes.open(pid)
	if err != nil {
		if !isGone(err) && !errors.Is(err, errKernelThread) {
			a.stats.Failed++
			fmt.Fprintf(a.cfg.Log, "golineage agent: process %d: %v\n", pid, err)
		}
		return
	}
	switch x.kind {
	case notGo:
		a.stats.NotGo++
		return
	case upstream:
		a.stats.Upstream++
		if x.verdict {
			return // not profiled (Config.Upstream)
		}
	}
	if err := a.start(pid, x); err != nil {
		a.exes.release(x)
		switch {
		case errors.Is(err, lineageabi.ErrNotReady):
			a.pending[pid] = since
		case isGone(err):
		default:
			a.stats.Failed++
			fmt.Fprintf(a.cfg.Log, "golineage agent: process %d: %v\n", pid, err)
		}
	}
}

// start makes process pid, running executable x, a target.
func (a *Agent) start(pid int, x *exe) error {
	auxv, err := target.ReadAuxv(pid)
	if err != nil {
		return err
	}
	bias, err := target.LoadBias(auxv, x.bin.Entry, x.bin.PIE)
	if err != nil {
		return err
	}
	mem := target.ProcMem(pid)
	var tc ebpf.Target
	var h *lineageabi.Header
	var reg *lineageabi.Registry
	if x.abi != nil {
		if h, err = x.abi.LoadHeader(mem, bias); err != nil {
			return err
		}
		if reg, err = h.Registry(); err != nil {
			return err
		}
		tc = Target(x.abi.Static, h)
	}
	info := a.describe(pid, x)
	info.Lineage = x.abi != nil
	p := &proc{info: info, exe: x, bias: bias, h: h, tids: target.NewNSTIDs(pid), mem: mem, reg: reg}
	p.vdso, _ = target.ReadVDSO(pid, mem) // without one, its frames stay unnamed
	p.b = a.newBuilder(p)
	if err := a.c.AddTarget(pid, tc); err != nil {
		return err
	}
	a.procs[pid] = p
	a.stats.Started++
	// A process with GODEBUG=lineage=0 publishes no registry: it gets an
	// on-CPU profile only.
	if a.parked != nil && h != nil && h.Flags&lineageabi.FlagRegistry != 0 && h.Flags&lineageabi.FlagRecords != 0 {
		a.exes.retain(x)
		a.parked.cmds <- parkedCmd{start: &parkedTarget{info: info, x: x, bias: bias}}
	}
	fmt.Fprintf(a.cfg.Log, "golineage agent: profiling process %d (%s, %s)\n", pid, info.ServiceName, info.ExePath)
	return nil
}

func (a *Agent) newBuilder(p *proc) *pprofout.Builder {
	b := pprofout.New(p.exe.bin, p.bias, a.period)
	b.VDSO = p.vdso
	return b
}

// Target is what the BPF program needs of a process: the offsets of its
// executable's header h and the run-time fields of rt, the header as the
// process's memory holds it.
func Target(h, rt *lineageabi.Header) ebpf.Target {
	t := ebpf.Target{
		Lineage: rt.Flags&lineageabi.FlagRecords != 0,
		TLSG:    rt.Flags&lineageabi.FlagTLSG != 0, TLSGOffset: rt.TLSGOffset,
		OffGM: h.OffGM, OffMRegion: h.OffMRegion,
		OffRegionSeq: h.OffRegionSeq, OffRegionTid: h.OffRegionTid, OffRegionCur: h.OffRegionCur,
		OffRecSeq: h.OffRecSeq, RecordSize: rt.RecordSize,
	}
	// The registry's flag is a run-time field: the file's header has none.
	if r, err := rt.Registry(); err == nil && r != nil && r.LabelSize != 0 {
		t.Labels, t.OffRecG, t.OffGLabels = true, h.OffRecG, r.OffGLabels
	}
	return t
}

// flush hands every target's profile of the interval to the sink and
// starts the next; final says the agent is stopping.
func (a *Agent) flush(final bool) {
	var out []Profile
	pids := make([]int, 0, len(a.procs))
	for pid := range a.procs {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		p := a.procs[pid]
		if prof := a.profile(p); prof != nil {
			out = append(out, Profile{Process: p.info, Profile: prof, Final: final})
		}
		p.b = a.newBuilder(p)
	}
	if final {
		for _, pid := range pids {
			a.c.RemoveTarget(pid)
			a.exes.release(a.procs[pid].exe)
			delete(a.procs, pid)
		}
	}
	if len(out) > 0 {
		a.export(out)
	}
	if a.parked != nil {
		if final {
			// The reader exports its last profiles, then lets go of
			// the processes and their executables.
			close(a.parked.cmds)
			<-a.parked.done
		} else {
			a.parked.cmds <- parkedCmd{flush: true}
		}
	}
	// The executables' pages read this interval (symbols, the parked
	// goroutines' walks) are the page cache's: let them go from the
	// agent's resident set, which then counts what it holds itself.
	a.exes.releasePages()
	st := a.Stats()
	fmt.Fprintf(a.cfg.Log, "golineage agent: %d targets, %d samples (%d lost, %d without lineage), %d profiles; skipped %d upstream Go and %d other processes\n",
		st.Targets, st.Samples, st.Lost, st.Torn+st.Malformed, st.Profiles, st.Upstream, st.NotGo)
}

// profile returns the profile of p's samples, nil if it has none.
func (a *Agent) profile(p *proc) *profile.Profile {
	if p.b.Len() == 0 {
		return nil
	}
	var prof *profile.Profile
	if err := guard(func() { prof = p.b.Profile() }); err != nil {
		fmt.Fprintf(a.cfg.Log, "golineage agent: process %d: %v; its profile is dropped\n", p.info.PID, err)
		return nil
	}
	return prof
}

// guard runs f, turning a memory fault (with SetPanicOnFault: a mapped
// executable truncated under the reader) into an error.
func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("memory fault at %#x reading its executable (truncated?)", e.Addr())
		}
	}()
	f()
	return nil
}

// export hands ps to the sink; the sampling loop and the parked reader
// call it.
func (a *Agent) export(ps []Profile) {
	a.exportMu.Lock()
	defer a.exportMu.Unlock()
	a.profiles.Add(uint64(len(ps)))
	a.sink.Export(ps)
}

// describe reads what names process pid: its service name, executable and
// container.
func (a *Agent) describe(pid int, x *exe) *Process {
	p := &Process{PID: pid, GoVersion: x.bin.GoVersion, GNUBuildID: x.gnuBuildID, GoBuildID: x.goBuildID}
	p.ExePath, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	p.ExePath = strings.TrimSuffix(p.ExePath, " (deleted)")
	p.ExeName = filepath.Base(p.ExePath)
	p.ServiceName = p.ExeName
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		if v := environ(env, "OTEL_SERVICE_NAME"); v != "" {
			p.ServiceName = v
		}
	}
	if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil {
		p.ContainerID = ContainerID(string(cg))
	}
	return p
}

// environ returns the value of name in a NUL-separated environment block.
func environ(env []byte, name string) string {
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// ContainerID finds a container's ID in the contents of a /proc/PID/cgroup
// file: the last 64-hex-digit element of a path (docker-ID.scope,
// cri-containerd-ID.scope, /docker/ID, kubepods/.../ID), or "".
func ContainerID(cgroup string) string {
	id := ""
	for _, line := range strings.Split(cgroup, "\n") {
		// hierarchy-ID:controllers:path
		_, path, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if _, path, ok = strings.Cut(path, ":"); !ok {
			continue
		}
		for _, el := range strings.Split(path, "/") {
			el = strings.TrimSuffix(el, ".scope")
			if i := strings.LastIndexAny(el, "-:"); i >= 0 {
				el = el[i+1:]
			}
			if isHex64(el) {
				id = el
			}
		}
	}
	return id
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isGone reports whether err says the process is gone (it exited while
// being read): not worth a line.
func isGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}
