package lineage

import (
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// Memory is a target's memory as another reader serves it: a debugger
// that holds the process, for example. ReadAt fills b from runtime
// address addr or returns an error.
type Memory interface {
	ReadAt(b []byte, addr uint64) error
}

// Executable is a Go executable opened on its own, to walk and symbolize
// stacks in memory that another reader serves (Memory), such as the gdb
// extension's: OpenPID and OpenCore read the memory themselves.
type Executable struct {
	exe *opentarget.Exe
}

// OpenExecutable opens the executable at path, loaded at bias (the
// target's runtime addresses minus the file's: 0 unless it is position
// independent).
func OpenExecutable(path string, bias uint64) (*Executable, error) {
	exe, err := opentarget.OpenExe(path)
	if err != nil {
		return nil, err
	}
	exe.Bias = bias
	return &Executable{exe: exe}, nil
}

// Close closes the file.
func (e *Executable) Close() error { return e.exe.Close() }

// ThreadStack walks a thread's stack by frame pointers from regs (the
// thread's own registers: its PC is where it is), reading mem, and
// symbolizes it, innermost first, inlined calls expanded. stop says why
// the walk ended before the stack's root ("" if it did not).
func (e *Executable) ThreadStack(mem Memory, regs Registers) (frames []Frame, stop string) {
	w := stack.Unwind(mem, e.exe.Bin, e.exe.Bias, target.Regs(regs))
	return toFrames(stack.SymbolizeWalk(e.exe.Bin, e.exe.Bias, w)), w.Stop
}
