// Golineage prints and profiles the native stacks of a Go process's threads
// with each goroutine's lineage (who created it, and who created that one)
// stitched in below the goroutine's root frame.
//
// Usage:
//
//	golineage stacks [-native] PID
//	golineage stacks [-native] --core CORE EXE
//	golineage profile [-hz 99] [-duration 10s] [-o out.pb.gz] [-format pprof|folded|svg] [-collector ptrace|bpf] PID
//	golineage symbolize [-bias N] EXE
//
// symbolize resolves PCs read from standard input through EXE's pclntab, and
// unwind walks one thread's frame pointers with memory served over the pipe,
// for tools without a Go symbolizer or unwinder (the gdb extension uses both
// on stripped binaries, where gdb has neither symbols nor CFI).
//
// It reads the target only through ptrace (threads stopped for a consistent
// view, then detached) or a core file, symbolizes from the executable's
// pclntab (so stripped binaries work), and reads lineage through the
// documented lineage ABI (doc/lineage-abi.md), never through DWARF or
// runtime-internal offsets.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

const usage = `usage:
	golineage stacks [-native] PID
	golineage stacks [-native] --core CORE EXE
	golineage profile [-hz 99] [-duration 10s] [-o out.pb.gz] [-format pprof|folded|svg] [-collector ptrace|bpf] PID
	golineage symbolize [-bias N] EXE < "PC [pc|ret|created]" lines
	golineage unwind [-bias N] EXE   (memory served over stdin/stdout; for the gdb extension)
`

// interrupted is set by SIGINT/SIGTERM; long-running commands poll it so that
// they always resume the target before exiting.
var interrupted atomic.Bool

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		for range sigs {
			interrupted.Store(true)
		}
	}()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "stacks":
		err = cmdStacks(os.Args[2:])
	case "profile":
		err = cmdProfile(os.Args[2:])
	case "symbolize":
		err = runSymbolize(os.Args[2:])
	case "unwind":
		err = runUnwind(os.Args[2:])
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "golineage: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "golineage: %v\n%s", err, usage)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "golineage: %v\n", err)
		os.Exit(1)
	}
	if interrupted.Load() {
		os.Exit(130)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
