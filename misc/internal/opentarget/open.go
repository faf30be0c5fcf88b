package opentarget

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

// Exe is a target's executable with its load bias: what symbolizes the
// target's PCs.
type Exe struct {
	Bin  *gobin.Binary
	Bias uint64 // load bias, set once the target is opened
}

// Close closes the executable.
func (e *Exe) Close() error { return e.Bin.Close() }

// ErrExited reports a process that has exited (a zombie).
var ErrExited = errors.New("exited")

// ErrNoProcess reports a PID that no process has.
var ErrNoProcess = errors.New("no such process")

// NoProcessError is ErrNoProcess for a PID; it matches syscall.ESRCH too.
type NoProcessError struct{ PID int }

func (e *NoProcessError) Error() string { return fmt.Sprintf("process %d: no such process", e.PID) }

func (e *NoProcessError) Unwrap() []error { return []error{ErrNoProcess, syscall.ESRCH} }

// OpenLiveExe opens the executable of running process pid, with errors
// that say why it cannot be read.
func OpenLiveExe(pid int) (*Exe, error) {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return nil, &NoProcessError{PID: pid}
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
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				return nil, &NoProcessError{PID: pid}
			}
			if target.IsKernelThread(pid) {
				return nil, fmt.Errorf("process %d has no executable (a kernel thread): %w", pid, gobin.ErrNotGo)
			}
			return nil, fmt.Errorf("process %d has %w: it is exiting, and its executable is gone", pid, ErrExited)
		}
		if errors.Is(err, gobin.ErrNotGo) {
			name, _ := os.Readlink(path)
			return nil, fmt.Errorf("process %d (%s) is not a Go program: %w", pid, name, gobin.ErrNotGo)
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
			return nil, fmt.Errorf("%s is not a Go program: %w", path, err)
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
		return nil, fmt.Errorf("%s was built by %s, which does not publish the goroutine lineage ABI (build it with the fpsafe fork's toolchain): %w", bin.Path, v, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin.Path, err)
	}
	return abi, nil
}
