// Package lineage reads the goroutines of a running Go process, or of a core
// file and its executable, from outside the process, through the goroutine
// lineage ABI that programs built by the fpsafe fork publish
// (doc/lineage-abi.md).
//
// A Process gives the threads' current goroutines (Regions, Sampler), every
// goroutine with its parent, ancestors, state, wait reason and time, wait
// object, pprof labels, start and creation sites (Goroutines), and with its
// stack too (GoroutineStacks: one batched pass, a few vectored reads per
// hundred goroutines; Stack walks one goroutine's), and, read again and
// again as a profiler's ticks read them, what changed since the last read
// (Watch: a goroutine that stayed parked is not read again). Stacks are walked by
// frame pointers and the executable's SFrame table and symbolized from its
// pclntab, inlined frames expanded. A live process is read with
// process_vm_readv and is never stopped: reads follow the ABI's
// consistency rule, and a goroutine that keeps changing while read is left
// out (Snapshot.Torn counts them). Stop holds every thread of a live
// process with ptrace instead, until Resume: a Stopped reads one instant,
// gives the threads' registers, and walks running goroutines' stacks too.
// StopThread holds one thread while a function runs, the cheap stop of a
// sampler, which runs its loop in OnTracerThread (where the stops are
// made) and lists threads with ThreadIDs. ReadAt and ReadV read raw memory
// (of the process, the core, or a Stopped) for a reader that decodes more
// than this package does. OpenExecutable walks stacks in memory another
// reader serves (a debugger's).
//
// # The program's own view
//
// The program's goroutine dump (runtime.Stack with all set, or
// runtime/pprof's goroutine profile at debug=2) lists fewer goroutines and
// frames than a reader finds: it leaves out the runtime's own goroutines
// (Goroutine.System) and the runtime's internal frames and compiler
// wrappers (Frame.Hidden). The goroutines with System false, in ID order,
// each with DumpFrames of its Stack and its CreatedBy and Parent, are what
// that dump prints, frame for frame.
//
// # Cost
//
// GoroutineStacks reads ten thousand goroutines parked 20 frames deep,
// with their stacks, in about 60 ms of CPU on a small VM and about 700
// vectored reads; OpenPID takes about 15 ms (doc/benchmarks.md, "The
// reader SDK's batch read", has the figures). Goroutines parked at the same place share one Stack
// slice, symbolized once. Printing what it returns can cost more than the
// read: two hundred thousand frames formatted one by one with fmt take
// about as long again; the example program ps (misc/lineage/example/ps)
// appends them to one buffered writer instead.
//
// # Errors
//
// Errors match the package's sentinels with errors.Is whatever they wrap:
// ErrNoProcess, ErrExited (at open, or at any read after it), ErrPermission,
// ErrNotGo, ErrNoLineage, ErrVersion (a *VersionError says which versions),
// ErrClosed, ErrRunning, ErrResumed, ErrThreadExited, ErrStopTimeout.
//
// # Versions
//
// The package is released in the module fpsafe.dev/misc at the version
// misc/lineage/VERSION names (doc/install.md, "The reader SDK"). The
// module is at v0: until v1, names may be removed or changed incompatibly
// between minor versions (v0.1 to v0.2), never between patch versions;
// fields may be added in any. It reads lineage ABI version 2
// (ABIVersion) and refuses others with a *VersionError. Targets: Linux
// processes and cores, amd64 and arm64, of programs built by this
// repository's fork toolchain (the release the repository's VERSION file
// names) with the lineage ABI on (the default; GODEBUG=lineage=0 turns
// records off and then Goroutines returns an error).
package lineage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// ABIVersion is the lineage ABI version this package reads.
const ABIVersion = lineageabi.Version

// Options tune how a target is opened. A nil *Options is the zero value.
type Options struct {
	// NoLabels skips reading goroutines' pprof labels (a few reads fewer
	// for each goroutine that has labels).
	NoLabels bool
	// NoLineage opens a target whose executable publishes no lineage
	// header (built by an upstream toolchain, or to read native stacks
	// only): Goroutines and Regions then return ErrNoLineage, and a
	// Stopped gives only threads and their stacks.
	NoLineage bool
	// FastStops makes Stop and StopThread cheaper, for a sampler that
	// stops the process tick after tick: they do not read each thread's
	// scheduling state (Thread.State is ""), and Stop lists the threads
	// once, so a thread started while it stops them is not held.
	FastStops bool
}

// Process is an open target: a live process or a core with its executable.
//
// Concurrency: Goroutines, GoroutineStacks, Stack, Regions, NewSampler,
// Watch, Threads, ThreadIDs, ReadAt and ReadV may be called from several
// goroutines at once (each Sampler and Watcher from one goroutine at a
// time). Stop,
// StopThread and OnTracerThread, which use the one tracer thread a
// Process keeps, must be called from one goroutine at a time, and Close
// when no other call is running. After Close every method returns
// ErrClosed.
type Process struct {
	pid  int // 0 for a core
	exe  *opentarget.Exe
	abi  *lineageabi.ABI
	mem  target.Mem
	core *target.Core
	opts Options
	// threads of a core or a Stopped: their registers, for the
	// goroutines they run
	threads []target.Thread
	sym     *symbols
	closed  *atomic.Bool
	tr      *target.Tracer // StopThread's, started by its first call
	onTr    bool           // running on tr's thread (OnTracerThread)
	keepRaw bool           // goroutines keep the registry's reading (lineageraw)
	shared  bool           // exe is its opener's: Close leaves it open (lineageraw.OpenShared)
}

// newProcess is a Process reading mem, symbolized by exe.
func newProcess(pid int, exe *opentarget.Exe, abi *lineageabi.ABI, mem target.Mem, opts *Options) *Process {
	p := &Process{pid: pid, exe: exe, abi: abi, mem: mem, closed: new(atomic.Bool)}
	p.sym = &symbols{starts: map[uint64]startSite{}, gos: map[uint64]Site{}, names: stack.NewStartNamer(exe.Bin, exe.Bias)}
	if opts != nil {
		p.opts = *opts
	}
	return p
}

// usable is the error of a call on a closed Process, or with a done
// context.
func (p *Process) usable(ctx context.Context) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if ctx != nil {
		return ctx.Err()
	}
	return nil
}

// publicError is the package's error for err (errors.go).
func (p *Process) publicError(err error) error {
	if err != nil && p.closed.Load() {
		return ErrClosed
	}
	return publicError(p.pid, err)
}

// OpenPID opens live process pid. Its memory is read with process_vm_readv,
// which needs the permission ptrace would need (the same user and
// kernel.yama.ptrace_scope permitting, or CAP_SYS_PTRACE); the process is not
// stopped. ctx bounds the open only.
func OpenPID(ctx context.Context, pid int, opts *Options) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if pid <= 0 {
		return nil, &opentarget.NoProcessError{PID: pid}
	}
	exe, abi, err := opentarget.OpenLive(pid, opts != nil && opts.NoLineage)
	if err != nil {
		if errors.Is(err, ErrNoProcess) || errors.Is(err, ErrExited) {
			return nil, err
		}
		return nil, publicError(pid, err)
	}
	return newProcess(pid, exe, abi, target.ProcMem(pid), opts), nil
}

// OpenCore opens core file corePath dumped from executable exePath. It
// refuses a core of another build.
func OpenCore(corePath, exePath string, opts *Options) (*Process, error) {
	exe, err := opentarget.OpenExe(exePath)
	if err != nil {
		return nil, err
	}
	var abi *lineageabi.ABI
	if opts == nil || !opts.NoLineage {
		if abi, err = exe.FindABI(); err != nil {
			exe.Close()
			return nil, publicError(0, err)
		}
	}
	c, err := exe.OpenCore(corePath, abi)
	if err != nil {
		var ce *opentarget.CoreError
		if errors.As(err, &ce) {
			ce.Core.Close()
			err = &CoreError{Damage: coreDamage(ce.Core.Damage), Err: ce.Err}
		}
		exe.Close()
		return nil, err
	}
	p := newProcess(0, exe, abi, target.NewCachedMem(c), opts)
	p.core, p.threads = c, c.Threads
	return p, nil
}

// CoreDamage is what a damaged core file lost: a core cut short (a dump
// interrupted, a full disk) or with corrupt headers or notes is opened all
// the same, and what it lost is left out of every read.
type CoreDamage struct {
	Size, Want int64    // the file's size, and the size its headers describe
	Notes      int      // notes cut, corrupt, or beyond the end of the file
	Segments   int      // PT_LOAD segments not wholly in the file, or corrupt
	Details    []string // what was damaged, in the order found (the first few)
}

// Truncated reports whether the file is shorter than its headers say.
func (d CoreDamage) Truncated() bool { return d.Size < d.Want }

// Damaged reports whether anything of the core was lost.
func (d CoreDamage) Damaged() bool { return d.Truncated() || len(d.Details) > 0 }

func coreDamage(d target.CoreDamage) CoreDamage {
	return CoreDamage{Size: d.Size, Want: d.Want, Notes: d.Notes, Segments: d.Segments, Details: d.Details}
}

// CoreError is OpenCore's error for a core too damaged to read: Damage
// says what it lost.
type CoreError struct {
	Damage CoreDamage
	Err    error
}

// Error is the underlying error's text.
func (e *CoreError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *CoreError) Unwrap() error { return e.Err }

// CoreDamage is what the core lost (the zero value for a whole core or a
// live process).
func (p *Process) CoreDamage() CoreDamage {
	if p.core == nil {
		return CoreDamage{}
	}
	return coreDamage(p.core.Damage)
}

// Threads are a core's threads with their registers at the dump, nil for a
// live process (Stop gives a live process's).
func (p *Process) Threads() []Thread {
	if p.core == nil {
		return nil
	}
	return threads(p.threads)
}

// ThreadIDs lists the target's threads by id, ascending: a live
// process's from /proc/PID/task (one directory read: nothing is stopped
// and no memory read), a core's from its notes.
func (p *Process) ThreadIDs() ([]int, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if p.pid == 0 {
		tids := make([]int, 0, len(p.threads))
		for _, th := range p.threads {
			tids = append(tids, th.TID)
		}
		sort.Ints(tids)
		return tids, nil
	}
	tids, err := target.ListThreads(p.pid)
	return tids, p.publicError(err)
}

// Close releases the executable (and the core) and the tracer thread, if
// Stop or StopThread started one. A second Close does nothing and returns
// nil.
func (p *Process) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	if p.tr != nil {
		p.tr.Close()
	}
	if p.core != nil {
		p.core.Close()
	}
	if p.shared {
		return nil
	}
	return p.exe.Close()
}

// PID is the live process's id, 0 for a core.
func (p *Process) PID() int { return p.pid }

// LoadBias is what the target's addresses add to the executable's
// link-time addresses: 0 unless the executable is position independent.
func (p *Process) LoadBias() uint64 { return p.exe.Bias }

// ReadAt reads len(b) bytes of the target's memory at runtime address
// addr: of a live process with process_vm_readv (it is not stopped, so
// what it reads may be changing: see Stop), of a core from the file. An
// unreadable range is an error that names it.
func (p *Process) ReadAt(b []byte, addr uint64) error {
	if p.closed.Load() {
		return ErrClosed
	}
	return p.publicError(p.mem.ReadAt(b, addr))
}

// ReadV reads bufs[i] at addrs[i] for every i, with as few system calls
// as it can (process_vm_readv takes up to 1024 ranges), and sets errs[i],
// nil if bufs[i] was filled. The ranges are read in order; no order is
// promised within one range.
func (p *Process) ReadV(bufs [][]byte, addrs []uint64, errs []error) {
	if p.closed.Load() {
		for i := range errs {
			errs[i] = ErrClosed
		}
		return
	}
	target.ReadV(p.mem, bufs, addrs, errs)
}

// view reads the lineage header and the region registry afresh.
func (p *Process) view(ctx context.Context) (*lineageabi.View, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if p.abi == nil {
		return nil, fmt.Errorf("%s: %w (opened with NoLineage)", p.exe.Bin.Path, ErrNoLineage)
	}
	v, err := p.abi.Load(p.mem, p.exe.Bias)
	if err != nil {
		return nil, err
	}
	v.ReadLabels = !p.opts.NoLabels
	if ctx != nil {
		v = v.WithContext(ctx)
	}
	return v, nil
}
