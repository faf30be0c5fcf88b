// Golineage prints and profiles the native stacks of a Go process's threads
// with each goroutine's lineage (who created it, and who created that one)
// stitched in below the goroutine's root frame.
//
// Usage:
//
//	golineage stacks [-all] [-native] [-stats] [-stop] [-func REGEXP]
//		[-goid N] [-state S] PID | --core CORE EXE
//	golineage ps [-json] [-stacks] [-stats] [-stop] [-func REGEXP] [-goid N]
//		[-state S] PID | --core CORE EXE
//	golineage tree [-json] [-stats] [-stop] [-func REGEXP] [-goid N]
//		[-state S] PID | --core CORE EXE
//	golineage waits [-json] [-stats] [-stop] [-func REGEXP] [-goid N]
//		[-state S] PID | --core CORE EXE
//	golineage profile [-consistent] [-native] [-running] [-stats] [-wall]
//		[-collector ebpf|ptrace] [-duration D]
//		[-format pprof|folded|svg] [-hz N] [-o FILE] PID
//	golineage agent [-otlp-insecure] [-upstream] [-duration D] [-hz N]
//		[-interval D] [-metrics ADDR] [-o DIR] [-otlp ENDPOINT]
//		[-otlp-ca FILE] [-otlp-header KEY=VALUE] [-parked D]
//	golineage symbolize [-bias N] EXE
//	golineage unwind [-bias N] EXE
//	golineage help [COMMAND]
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
//
// The usage block above is the output of "golineage help" (a test keeps
// them equal); "golineage help COMMAND" describes each flag.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"fpsafe.dev/misc/lineage"
)

// A command is one golineage subcommand. Its usage lines, its -h text and
// "golineage help" are generated from this table and the flags it
// defines, so that they cannot disagree with what is parsed.
type command struct {
	name  string
	args  string // the operands, after the flags
	short string // what it does, one line
	// flags defines the command's flags on fl and returns the function
	// that runs the command once fl is parsed.
	flags func(fl *flag.FlagSet) func(inv *invocation) error
}

// An invocation is one run of a command: its operands and its world.
type invocation struct {
	ctx            context.Context // canceled by SIGINT, SIGTERM, SIGHUP
	name           string
	args           []string // the operands, flags removed
	stdin          io.Reader
	stdout, stderr io.Writer
}

// commands is filled in by init: the commands refer to it (help).
var commands []*command

func init() {
	commands = []*command{
		{"stacks", "PID | --core CORE EXE", "every thread's native stack with its goroutine's lineage", stacksFlags},
		{"ps", "PID | --core CORE EXE", "every goroutine, one line each (or JSON with -json)", psFlags},
		{"tree", "PID | --core CORE EXE", "every goroutine under its creator", treeFlags},
		{"waits", "PID | --core CORE EXE", "goroutines grouped by the object they wait on", waitsFlags},
		{"profile", "PID", "sample stacks with lineage into a profile", profileFlagSet},
		{"agent", "", "profile every process built with the lineage ABI, continuously (a node agent)", agentFlagSet},
		{"symbolize", "EXE", `resolve "PC [pc|ret|created|start]" lines from stdin (for the gdb extension)`, symbolizeFlags},
		{"unwind", "EXE", "walk one thread's stack, memory served over stdin/stdout (for the gdb extension)", unwindFlags},
		{"help", "[COMMAND]", "print this text, or a command's flags", helpFlags},
	}
}

const exitStatus = `Exit status: 0 success; 1 failure (including a damaged core, after
what it still holds is printed and one line counting what was skipped);
2 bad usage; 130 interrupted (SIGINT, SIGTERM or SIGHUP: every thread is
detached at once, the target runs again, ps, tree, waits and stacks print
nothing, and a profile writes what was sampled; the agent writes its
last profiles and exits 0); 141 standard output closed early (a broken pipe, as in
"golineage ps PID | head": the output stops quietly).
`

// interrupted is set by SIGINT/SIGTERM/SIGHUP while a command runs; the
// command's context is canceled at the same time, and every loop that
// reads the target polls it, so that the target is detached and resumed
// within milliseconds of the signal's delivery.
var interrupted atomic.Bool

// stdin is what symbolize and unwind read (tests replace it).
var stdin io.Reader = os.Stdin

// errInterrupted is run's error when a signal ended the command.
var errInterrupted = errors.New("interrupted")

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs one golineage command and returns its exit status (see
// exitStatus).
func cli(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	// SIGPIPE is caught so that a write to a closed pipe returns EPIPE
	// (ended quietly below) instead of killing the tool, perhaps while it
	// holds the target's threads stopped.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	interrupted.Store(false)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != syscall.SIGPIPE {
					interrupted.Store(true)
					cancel()
				}
			case <-done:
				return
			}
		}
	}()
	defer func() { signal.Stop(sigs); close(done); cancel() }()
	err := runContext(ctx, args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, syscall.EPIPE):
		return 141
	case errors.Is(err, errInterrupted) || interrupted.Load():
		return 130
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "golineage: %v\n", err)
		if ue.cmd != "" {
			fmt.Fprintf(stderr, "run 'golineage help %s' for usage\n", ue.cmd)
		} else {
			fmt.Fprintln(stderr, "run 'golineage help' for usage")
		}
		return 2
	}
	fmt.Fprintf(stderr, "golineage: %v\n", err)
	return 1
}

// run runs the command args names, writing only to stdout and stderr.
func run(args []string, stdout, stderr io.Writer) error {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run until ctx is canceled: the command then detaches from
// the target and returns errInterrupted.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 {
		return usageError{msg: "no command"}
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	}
	c := lookup(name)
	if c == nil {
		return usageError{msg: fmt.Sprintf("unknown command %q", name)}
	}
	fl := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	cmdRun := c.flags(fl)
	operands, err := parseInterleaved(fl, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		writeCommandUsage(stdout, c)
		return nil
	}
	if err != nil {
		return usageError{cmd: c.name, msg: fmt.Sprintf("%s: %v", c.name, err)}
	}
	inv := &invocation{ctx: ctx, name: c.name, args: operands, stdin: stdin, stdout: stdout, stderr: stderr}
	// A read's output is all or nothing: it goes out once the read is
	// over, so a signal during the read prints nothing, and one that
	// comes while the output is written no longer interrupts it.
	var out *bytes.Buffer
	if readCommands[c.name] {
		out = new(bytes.Buffer)
		inv.stdout = out
	}
	err = cmdRun(inv)
	if errors.Is(err, lineage.ErrNoLineage) && fl.Lookup("native") != nil {
		// The readers' errors give no advice about flags; a command
		// that can read native stacks without lineage says so.
		err = fmt.Errorf("%w (use -native to print native stacks without lineage)", err)
	}
	if ue, ok := err.(usageError); ok && ue.cmd == "" {
		ue.cmd = c.name // e.g. parsePID's: the usage to see is c's
		err = ue
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) && !daemonCommands[c.name] {
		return errInterrupted
	}
	if out != nil && out.Len() > 0 {
		// Also after an error: a damaged core's output comes before
		// the line that counts what was skipped.
		if _, werr := stdout.Write(out.Bytes()); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// daemonCommands are the commands that run until a signal stops them: for
// them SIGINT and SIGTERM are the normal end (exit status 0, once they
// wrote what they hold).
var daemonCommands = map[string]bool{"agent": true}

// readCommands are the commands whose output is one read of a target,
// written once the read is over (runContext).
var readCommands = map[string]bool{"stacks": true, "ps": true, "tree": true, "waits": true}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// parseInterleaved parses fl's flags wherever they are among args
// ("ps 1234 -json" as "ps -json 1234") and returns the operands in their
// order. Everything after "--" is an operand.
func parseInterleaved(fl *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(operands, rest...), nil
		}
		if len(rest) == 0 {
			return operands, nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

type usageError struct {
	cmd string // the command whose usage was broken, "" for none
	msg string
}

func (e usageError) Error() string { return e.msg }

// usage returns a usage error of inv's command.
func (inv *invocation) usage(format string, args ...any) error {
	return usageError{cmd: inv.name, msg: inv.name + ": " + fmt.Sprintf(format, args...)}
}

// synopsis is c's usage line, wrapped to fit 80 columns after a tab: its
// boolean flags, then its other flags, each sorted, then its operands.
func synopsis(c *command) string {
	fl := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fl)
	var bools, others []string
	fl.VisitAll(func(f *flag.Flag) {
		if f.Name == "core" {
			return // in the operands: --core CORE EXE
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			bools = append(bools, "[-"+f.Name+"]")
			return
		}
		name, _ := flag.UnquoteUsage(f)
		others = append(others, "[-"+f.Name+" "+name+"]")
	})
	sort.Strings(bools)
	sort.Strings(others)
	words := append(append([]string{"golineage", c.name}, bools...), others...)
	if c.args != "" {
		words = append(words, c.args) // one piece: "PID | --core CORE EXE"
	}
	var b strings.Builder
	col := 0
	for i, w := range words {
		switch {
		case i == 0:
		case col+1+len(w) > 72:
			b.WriteString("\n\t")
			col = 8
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// usageText is "golineage help": every command's synopsis and the exit
// statuses.
func usageText() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands {
		for _, l := range strings.Split(synopsis(c), "\n") {
			fmt.Fprintf(&b, "\t%s\n", l)
		}
	}
	b.WriteString("\n")
	b.WriteString(exitStatus)
	return b.String()
}

// writeCommandUsage prints c's synopsis, what it does and its flags.
func writeCommandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", synopsis(c), strings.ToUpper(c.short[:1])+c.short[1:])
	fl := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fl)
	n := 0
	fl.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		fl.SetOutput(w)
		fl.PrintDefaults()
	}
	fmt.Fprintf(w, "\n%s", exitStatus)
}

func helpFlags(fl *flag.FlagSet) func(inv *invocation) error {
	return func(inv *invocation) error {
		switch len(inv.args) {
		case 0:
			fmt.Fprint(inv.stdout, usageText())
		case 1:
			c := lookup(inv.args[0])
			if c == nil {
				return inv.usage("unknown command %q", inv.args[0])
			}
			writeCommandUsage(inv.stdout, c)
		default:
			return inv.usage("want at most one COMMAND")
		}
		return nil
	}
}

// writeOutput runs out, which prints to w (stdout, buffered) and to
// stderr, and returns out's error, or ctx's as soon as ctx is canceled:
// printing the goroutines read may compute for seconds (a tree of 200k),
// and the target runs again by then, so the output is left behind,
// unfinished, and nothing more reaches stdout or stderr.
func writeOutput(ctx context.Context, stdout, stderr io.Writer, out func(w *bufio.Writer, stderr io.Writer) error) error {
	so, se := &stopWriter{w: stdout}, &stopWriter{w: stderr}
	done := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(so)
		err := out(w, se)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		so.stop()
		se.stop()
		return ctx.Err()
	}
}

// A stopWriter writes to w until it is stopped.
type stopWriter struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
}

var errOutputStopped = errors.New("output stopped")

func (s *stopWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, errOutputStopped
	}
	return s.w.Write(p)
}

// stop makes every later Write fail; one in progress ends first.
func (s *stopWriter) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}
