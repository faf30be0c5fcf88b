// Package lineage reads the goroutines of a running Go process, or of a core
// file and its executable, from outside the process, through the goroutine
// lineage ABI that programs built by the fpsafe fork publish
// (doc/lineage-abi.md).
//
// A Process gives the threads' current goroutines (Regions, Sampler), every
// goroutine with its parent, ancestors, state, wait reason, wait object,
// pprof labels, start and creation sites (Goroutines), and a goroutine's
// stack walked by frame pointers and symbolized from the executable's
// pclntab, inlined frames expanded (Stack). A live process is read with
// process_vm_readv and is never stopped: reads follow the ABI's
// consistency rule, and a goroutine that keeps changing while read is left
// out (Snapshot.Torn counts them). Stop holds every thread of a live
// process with ptrace instead, until Resume: a Stopped reads one instant,
// gives the threads' registers, and walks running goroutines' stacks too.
// StopThread holds one thread while a function runs, the cheap stop of a
// sampler. ReadAt and ReadV read raw memory (of the process, the core, or
// a Stopped) for a reader that decodes more than this package does.
// OpenExecutable walks stacks in memory another reader serves (a
// debugger's).
//
// Stability: the API of this package is stable within the major version of
// the module fpsafe.dev/misc: names are not removed or changed
// incompatibly, fields may be added. It reads lineage ABI version 2 and
// refuses other versions with an error that names them. Targets: Linux
// processes and cores, amd64 and arm64, of programs built by this
// repository's fork toolchain (the release the repository's VERSION file
// names) with the lineage ABI on (the default; GODEBUG=lineage=0 turns
// records off and then Goroutines returns an error).
package lineage

import (
	"context"
	"errors"
	"fmt"
	"os"

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
}

// Process is an open target: a live process or a core with its executable.
// Its methods may be called from one goroutine at a time.
type Process struct {
	pid  int // 0 for a core
	exe  *opentarget.Exe
	abi  *lineageabi.ABI
	mem  target.Mem
	core *target.Core
	opts Options
	// threads of a core: their registers, for the goroutines they run
	threads []target.Thread
	sites   map[uint64]Site // symbolized start PCs and go statements
	names   *stack.StartNamer
	tr      *target.Tracer // StopThread's, started by its first call
}

// ErrExited reports a process that has exited (a zombie).
var ErrExited = opentarget.ErrExited

// ErrNoLineage reports a target built without the lineage ABI (by an
// upstream Go toolchain, for example).
var ErrNoLineage = lineageabi.ErrNoABI

// OpenPID opens live process pid. Its memory is read with process_vm_readv,
// which needs the permission ptrace would need (the same user and
// kernel.yama.ptrace_scope permitting, or CAP_SYS_PTRACE); the process is not
// stopped. ctx bounds the open only.
func OpenPID(ctx context.Context, pid int, opts *Options) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	exe, abi, err := opentarget.OpenLive(pid, opts != nil && opts.NoLineage)
	if err != nil {
		return nil, err
	}
	p := &Process{pid: pid, exe: exe, abi: abi, mem: target.ProcMem(pid), sites: map[uint64]Site{}}
	p.names = stack.NewStartNamer(exe.Bin, exe.Bias)
	if opts != nil {
		p.opts = *opts
	}
	return p, nil
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
			return nil, err
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
	p := &Process{exe: exe, abi: abi, mem: target.NewCachedMem(c), core: c, threads: c.Threads, sites: map[uint64]Site{}}
	p.names = stack.NewStartNamer(exe.Bin, exe.Bias)
	if opts != nil {
		p.opts = *opts
	}
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

func (e *CoreError) Error() string { return e.Err.Error() }
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

// Close releases the executable (and the core).
func (p *Process) Close() error {
	if p.tr != nil {
		p.tr.Close()
	}
	if p.core != nil {
		p.core.Close()
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
func (p *Process) ReadAt(b []byte, addr uint64) error { return p.mem.ReadAt(b, addr) }

// ReadV reads bufs[i] at addrs[i] for every i, with as few system calls
// as it can (process_vm_readv takes up to 1024 ranges), and sets errs[i],
// nil if bufs[i] was filled. The ranges are read in order; no order is
// promised within one range.
func (p *Process) ReadV(bufs [][]byte, addrs []uint64, errs []error) {
	target.ReadV(p.mem, bufs, addrs, errs)
}

// view reads the lineage header and the region registry afresh.
func (p *Process) view(ctx context.Context) (*lineageabi.View, error) {
	if p.abi == nil {
		return nil, fmt.Errorf("%s: %w (opened with NoLineage)", p.exe.Bin.Path, ErrNoLineage)
	}
	v, err := p.abi.Load(p.mem, p.exe.Bias)
	if err != nil {
		if p.pid != 0 && !processExists(p.pid) {
			return nil, fmt.Errorf("process %d: %w", p.pid, target.ErrGone)
		}
		return nil, err
	}
	v.ReadLabels = !p.opts.NoLabels
	if ctx != nil {
		v = v.WithContext(ctx)
	}
	return v, nil
}

func processExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
