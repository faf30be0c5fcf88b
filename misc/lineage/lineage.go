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
// out (Snapshot.Torn counts them).
//
// Stability: the API of this package is stable within the major version of
// the module fpsafe.dev/misc: names are not removed or changed
// incompatibly, fields may be added. It reads lineage ABI version 2 and
// refuses other versions with an error that names them. Targets: Linux
// processes and cores, amd64 and arm64, built by the go1.27.3-fpsafe fork
// toolchains with the lineage ABI on (the default; GODEBUG=lineage=0 turns
// records off and then Goroutines returns an error).
//
// This package is the repository's reader of process memory: golineage
// opens its targets through it.
package lineage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
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
}

// Process is an open target: a live process or a core with its executable.
// Its methods may be called from one goroutine at a time.
type Process struct {
	pid  int // 0 for a core
	exe  *Exe
	abi  *lineageabi.ABI
	mem  target.Mem
	core *target.Core
	opts Options
	// threads of a core: their registers, for the goroutines they run
	threads []target.Thread
	sites   map[uint64]Site // symbolized start PCs and go statements
	names   *stack.StartNamer
}

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
	exe, abi, err := OpenLive(pid, false)
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
	exe, err := OpenExe(exePath)
	if err != nil {
		return nil, err
	}
	abi, err := exe.FindABI()
	if err != nil {
		exe.Close()
		return nil, err
	}
	c, err := exe.OpenCore(corePath, abi)
	if err != nil {
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

// Close releases the executable (and the core).
func (p *Process) Close() error {
	if p.core != nil {
		p.core.Close()
	}
	return p.exe.Close()
}

// PID is the live process's id, 0 for a core.
func (p *Process) PID() int { return p.pid }

// view reads the lineage header and the region registry afresh.
func (p *Process) view(ctx context.Context) (*lineageabi.View, error) {
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

// Exe is a target's executable with its load bias: what symbolizes the
// target's PCs. It is exported for the repository's own tools (golineage);
// other programs use Process.
type Exe struct {
	Bin  *gobin.Binary
	Bias uint64 // load bias, set once the target is opened
}

// Close closes the executable.
func (e *Exe) Close() error { return e.Bin.Close() }

// ErrExited reports a process that has exited (a zombie).
var ErrExited = errors.New("exited")

// OpenLiveExe opens the executable of running process pid, with errors
// that say why it cannot be read.
func OpenLiveExe(pid int) (*Exe, error) {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return nil, fmt.Errorf("process %d: no such process", pid)
	}
	if s := target.ProcState(pid); s == "Z" || s == "X" {
		return nil, fmt.Errorf("process %d has %w: it is a zombie, which its parent has not reaped; nothing is left to read", pid, ErrExited)
	}
	path := fmt.Sprintf("/proc/%d/exe", pid)
	bin, err := gobin.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, &target.PermissionError{PID: pid, Err: err}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("process %d: no such process (or it has no executable: a kernel thread)", pid)
		}
		if errors.Is(err, gobin.ErrNotGo) {
			name, _ := os.Readlink(path)
			return nil, fmt.Errorf("process %d (%s) is not a Go program", pid, name)
		}
		return nil, err
	}
	if name, err := os.Readlink(path); err == nil {
		bin.Path = name
	}
	return &Exe{Bin: bin}, nil
}

// OpenLive opens the executable of running process pid, finds its load
// bias and, unless native (native stacks only), its lineage header.
func OpenLive(pid int, native bool) (*Exe, *lineageabi.ABI, error) {
	exe, err := OpenLiveExe(pid)
	if err != nil {
		return nil, nil, err
	}
	var abi *lineageabi.ABI
	if !native {
		if abi, err = exe.FindABI(); err != nil {
			exe.Close()
			return nil, nil, err
		}
	}
	auxv, err := target.ReadAuxv(pid)
	if err != nil {
		exe.Close()
		return nil, nil, fmt.Errorf("process %d: %w", pid, err)
	}
	if exe.Bias, err = target.LoadBias(auxv, exe.Bin.Entry, exe.Bin.PIE); err != nil {
		exe.Close()
		return nil, nil, err
	}
	return exe, abi, nil
}

// OpenExe opens an executable file.
func OpenExe(path string) (*Exe, error) {
	bin, err := gobin.Open(path)
	if err != nil {
		if errors.Is(err, gobin.ErrNotGo) {
			return nil, fmt.Errorf("%s is not a Go program: %v", path, err)
		}
		return nil, err
	}
	return &Exe{Bin: bin}, nil
}

// FindABI finds the lineage header in the executable, with an error that
// says which toolchain built it if it has none.
func (e *Exe) FindABI() (*lineageabi.ABI, error) {
	bin := e.Bin
	abi, err := lineageabi.Find(bin.ELF)
	if errors.Is(err, lineageabi.ErrNoABI) {
		v := bin.GoVersion
		if v == "" {
			v = "an unknown Go toolchain (no build info)"
		}
		return nil, fmt.Errorf("%s was built by %s, which does not publish the goroutine lineage ABI (build it with the fpsafe fork's toolchain, or use -native to print native stacks without lineage): %w", bin.Path, v, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w (use -native to print native stacks without lineage)", bin.Path, err)
	}
	return abi, nil
}
