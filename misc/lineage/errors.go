package lineage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/target"
)

// The package's errors. Every error a method returns for one of these
// conditions matches the sentinel with errors.Is (or the type with
// errors.As), whatever else it wraps; its text is one line that names the
// target and says what failed.
var (
	// ErrNoProcess: no process has the PID. The error also matches
	// syscall.ESRCH.
	ErrNoProcess = opentarget.ErrNoProcess

	// ErrExited: the process exited, before it was opened (a zombie) or
	// while it was read; the read is abandoned. A thread that exits while
	// StopThread holds it gives ErrThreadExited instead, and the process
	// goes on.
	ErrExited = opentarget.ErrExited

	// ErrPermission is fs.ErrPermission: reading the process needs the
	// permission ptrace would need (the same user and
	// kernel.yama.ptrace_scope permitting, or CAP_SYS_PTRACE).
	ErrPermission = fs.ErrPermission

	// ErrNotGo: the executable is not a Go program.
	ErrNotGo = gobin.ErrNotGo

	// ErrNoLineage: the executable publishes no lineage ABI (a Go program
	// built by an upstream toolchain, or a target opened with NoLineage).
	ErrNoLineage = lineageabi.ErrNoABI

	// ErrVersion: the target publishes a lineage ABI of another version
	// (the error is a *VersionError, which says which).
	ErrVersion = errors.New("unsupported lineage ABI version")

	// ErrClosed: the Process was closed.
	ErrClosed = errors.New("lineage: process closed")
)

// VersionError reports a lineage ABI version this package does not read.
type VersionError struct {
	Found uint32 // the version the target publishes
	Want  uint32 // the version this package reads (ABIVersion)
}

// Error says which versions, and what to do.
func (e *VersionError) Error() string {
	fix := "rebuild the target with this fork's toolchain"
	if e.Found > e.Want {
		fix = "read it with a newer release of this package"
	}
	return fmt.Sprintf("lineage ABI version %d: this reader reads version %d; %s", e.Found, e.Want, fix)
}

// Is makes errors.Is(err, ErrVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// exitedError is ErrExited for a read that failed because the process
// went away while it was read; it wraps what the read saw too.
type exitedError struct {
	pid int
	err error
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("process %d exited while it was read", e.pid)
}

func (e *exitedError) Unwrap() []error { return []error{ErrExited, e.err} }

// publicError turns an error of the readers this package is built on into
// one that matches the package's sentinels: a version mismatch, a process
// that went away (pid 0: a core, which cannot). It leaves other errors as
// they are.
func publicError(pid int, err error) error {
	if err == nil {
		return nil
	}
	var ve *lineageabi.VersionError
	if errors.As(err, &ve) {
		return &VersionError{Found: ve.Version, Want: ABIVersion}
	}
	if pid == 0 || errors.Is(err, ErrExited) || errors.Is(err, ErrThreadExited) {
		return err
	}
	if errors.Is(err, target.ErrGone) || !processAlive(pid) {
		return &exitedError{pid: pid, err: err}
	}
	return err
}

// processAlive reports whether live process pid still exists and is not a
// zombie.
func processAlive(pid int) bool {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return false
	}
	s := target.ProcState(pid)
	return s != "Z" && s != "X"
}
