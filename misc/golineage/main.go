// Golineage prints and profiles the native stacks of a Go process's threads
// with each goroutine's lineage (who created it, and who created that one)
// stitched in below the goroutine's root frame.
//
// Usage:
//
//	golineage stacks [-native] [-all] PID
//	golineage stacks [-native] [-all] --core CORE EXE
//	golineage ps [-json [-stacks]] PID | --core CORE EXE
//	golineage tree [-json] PID | --core CORE EXE
//	golineage waits [-json] PID | --core CORE EXE
//	golineage profile [-hz 99] [-duration 10s] [-o out.pb.gz] [-format pprof|folded|svg] [-collector ptrace|bpf] [-wall] PID
//	golineage symbolize [-bias N] EXE
//
// ps, tree and waits list every goroutine, not only those running on a
// thread: from the lineage ABI's registry, with its status, wait reason and
// what it waits on (ps), under its creator (tree), or grouped with the other
// goroutines blocked on the same object or at the same wait site (waits). stacks -all
// adds the stack of every goroutine that is not running, walked by frame
// pointers from its saved sched.bp.
//
// symbolize resolves PCs read from standard input through EXE's pclntab, and
// unwind walks one thread's frame pointers with memory served over the pipe,
// for tools without a Go symbolizer or unwinder (the gdb extension uses both
// on stripped binaries, where gdb has neither symbols nor CFI).
//
// It reads the target only through ptrace and process_vm_readv (threads
// stopped one at a time, or all together for a consistent view, then
// detached) or a core file, symbolizes from the executable's
// pclntab (so stripped binaries work), and reads lineage through the
// documented lineage ABI (doc/lineage-abi.md), never through DWARF or
// runtime-internal offsets.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

const usage = `usage:
	golineage stacks [-native] [-all] PID
	golineage stacks [-native] [-all] --core CORE EXE
	golineage ps [-json [-stacks]] PID | --core CORE EXE
	golineage tree [-json] PID | --core CORE EXE
	golineage waits [-json] PID | --core CORE EXE
	golineage profile [-hz 99] [-duration 10s] [-o out.pb.gz] [-format pprof|folded|svg] [-collector ptrace|bpf]
	                  [-native] [-running] [-consistent] [-wall] [-stats] PID
	golineage symbolize [-bias N] EXE < "PC [pc|ret|created|start]" lines
	golineage unwind [-bias N] EXE   (memory served over stdin/stdout; for the gdb extension)
	golineage help

Exit status: 0 success; 1 failure (including a truncated core, after the
partial stacks are printed); 2 bad usage; 130 interrupted (SIGINT, SIGTERM,
SIGHUP or SIGPIPE: the target is resumed and what was sampled is written).
`

// interrupted is set by SIGINT/SIGTERM/SIGHUP/SIGPIPE while a command runs;
// long-running commands poll it so that they always resume the target
// before exiting.
var interrupted atomic.Bool

// stdin is what symbolize and unwind read (tests replace it).
var stdin io.Reader = os.Stdin

// errInterrupted is run's error when a signal ended the command.
var errInterrupted = errors.New("interrupted")

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs one golineage command and returns its exit status (see usage).
func cli(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	interrupted.Store(false)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				interrupted.Store(true)
			case <-done:
				return
			}
		}
	}()
	defer func() { signal.Stop(sigs); close(done) }()
	err := run(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errInterrupted):
		return 130
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "golineage: %v\n%s", err, usage)
		return 2
	}
	fmt.Fprintf(stderr, "golineage: %v\n", err)
	return 1
}

// run runs the command args names, writing only to stdout and stderr.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 {
		return usageError{"no command"}
	}
	var err error
	switch args[0] {
	case "stacks":
		err = cmdStacks(args[1:], stdout, stderr)
	case "ps":
		err = cmdPs(args[1:], stdout, stderr)
	case "tree":
		err = cmdTree(args[1:], stdout, stderr)
	case "waits":
		err = cmdWaits(args[1:], stdout, stderr)
	case "profile":
		err = cmdProfile(args[1:], stdout, stderr)
	case "symbolize":
		err = cmdSymbolize(args[1:], stdin, stdout)
	case "unwind":
		err = cmdUnwind(args[1:], stdin, stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	if err == nil && interrupted.Load() {
		return errInterrupted
	}
	return err
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
