package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
	"fpsafe.dev/misc/lineage"
)

// exeFlags defines -bias for the helper commands; open parses their
// operand, EXE, and opens it.
type exeFlags struct{ bias string }

func (e *exeFlags) add(fl *flag.FlagSet) {
	fl.StringVar(&e.bias, "bias", "0", "load bias `N` of the executable (PIE), subtracted from every PC")
}

func (e *exeFlags) open(inv *invocation) (*gobin.Binary, uint64, error) {
	if len(inv.args) != 1 {
		return nil, 0, inv.usage("need exactly one EXE")
	}
	b, err := strconv.ParseUint(e.bias, 0, 64)
	if err != nil {
		return nil, 0, inv.usage("bad -bias %q", e.bias)
	}
	exe, err := opentarget.OpenExe(inv.args[0])
	if err != nil {
		return nil, 0, err
	}
	return exe.Bin, b, nil
}

func symbolizeFlags(fl *flag.FlagSet) func(*invocation) error { return helperFlags(fl, cmdSymbolize) }

func unwindFlags(fl *flag.FlagSet) func(*invocation) error { return helperFlags(fl, cmdUnwind) }

// helperFlags defines -bias for a helper command, which run runs on EXE.
func helperFlags(fl *flag.FlagSet, run func(bin *gobin.Binary, bias uint64, in io.Reader, out io.Writer) error) func(*invocation) error {
	var e exeFlags
	e.add(fl)
	return func(inv *invocation) error {
		bin, bias, err := e.open(inv)
		if err != nil {
			return err
		}
		defer bin.Close()
		return run(bin, bias, inv.stdin, inv.stdout)
	}
}

// cmdSymbolize resolves PCs through EXE's pclntab for tools that have no Go
// symbolizer of their own (the gdb extension on stripped binaries). Each
// input line is "PC [pc|ret|created|start]" (hex or decimal; default pc): an
// exact PC, a return address, a go statement's gopc as "created by" prints
// it, or a goroutine's start PC, answered with the function its go statement
// names as golineage ps prints it (names.go).
// Each output line answers one input line with tab-separated quadruples
// FUNC, FILE, LINE, OFFSET ("+0x.." for physical frames as golineage stacks
// prints it, else empty) for the logical frames, innermost first; an empty
// line if the PC is not in Go code.
func cmdSymbolize(bin *gobin.Binary, b0 uint64, in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	names := stack.NewStartNamer(bin, b0)
	sc := bufio.NewScanner(in)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || len(f) > 2 {
			return fmt.Errorf("symbolize: input line %d: want \"PC [pc|ret|created|start]\"", n)
		}
		pc, err := strconv.ParseUint(f[0], 0, 64)
		if err != nil {
			return fmt.Errorf("symbolize: input line %d: bad PC %q", n, f[0])
		}
		mode := "pc"
		if len(f) == 2 {
			mode = f[1]
		}
		var locs []stack.Loc
		switch mode {
		case "pc", "ret":
			locs = stack.Symbolize(bin, b0, []uint64{pc}, mode == "ret")
		case "created":
			locs = []stack.Loc{stack.CreatedBy(bin, b0, stack.Ancestor{GoPC: pc})}
		case "start":
			fn := names.Name(pc).Fn
			locs = []stack.Loc{{PC: pc, Func: fn.Func, File: fn.File, Line: fn.Line}}
		default:
			return fmt.Errorf("symbolize: input line %d: unknown mode %q", n, mode)
		}
		var fields []string
		for _, l := range locs {
			if l.Func != "" {
				off := ""
				if !l.Inlined && l.Offset > 0 && mode != "created" {
					off = fmt.Sprintf("+%#x", l.Offset)
				}
				fields = append(fields, gobin.PrintName(l.Func), l.File, strconv.Itoa(l.Line), off)
			}
		}
		fmt.Fprintln(w, strings.Join(fields, "\t"))
		w.Flush()
	}
	return sc.Err()
}

// cmdUnwind walks one thread's frame-pointer chain the way golineage stacks
// does, for a tool that owns the target (the gdb extension, on stripped
// binaries where gdb's own unwinder has no CFI to go by) and serves its
// memory. Input line 1: "PC SP FP LR" (hex). Then the command asks for memory
// with "read ADDR LEN" lines, each answered by one line of hex bytes or
// "fault". At the end it prints "frames", the stack as golineage stacks
// prints it, and "end".
func cmdUnwind(bin *gobin.Binary, b0 uint64, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	defer w.Flush()
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("unwind: no registers on input")
	}
	var regs [4]uint64
	f := strings.Fields(line)
	if len(f) != 4 {
		return fmt.Errorf("unwind: want \"PC SP FP LR\", got %q", strings.TrimSpace(line))
	}
	for i := range f {
		if regs[i], err = strconv.ParseUint(f[i], 0, 64); err != nil {
			return fmt.Errorf("unwind: bad register value %q", f[i])
		}
	}
	exe, err := lineage.OpenExecutable(bin.Path, b0)
	if err != nil {
		return err
	}
	defer exe.Close()
	mem := &servedMem{r: r, w: w, cache: map[uint64][]byte{}}
	frames, stop := exe.ThreadStack(mem, lineage.Registers{PC: regs[0], SP: regs[1], FP: regs[2], LR: regs[3]})
	if mem.err != nil {
		return mem.err
	}
	fmt.Fprintln(w, "frames")
	locs := make([]stack.Loc, 0, len(frames))
	for _, f := range frames {
		locs = append(locs, stack.Loc{PC: f.PC, Func: f.Function, File: f.File, Line: f.Line, Offset: f.Offset, Inlined: f.Inlined, Signal: f.Signal})
	}
	stack.WriteFrames(w, locs)
	if stop != "" {
		fmt.Fprintf(w, "...stack walk ended: %s\n", stop)
	}
	fmt.Fprintln(w, "end")
	return nil
}

// servedMem reads target memory by asking the tool at the other end of the
// pipe, a page at a time.
type servedMem struct {
	r     *bufio.Reader
	w     *bufio.Writer
	cache map[uint64][]byte // page address -> contents (nil: fault)
	err   error
	reads int
}

const servedPage = 4096

func (m *servedMem) page(a uint64) []byte {
	if p, ok := m.cache[a]; ok {
		return p
	}
	if m.err != nil || m.reads >= 4096 {
		return nil
	}
	m.reads++
	fmt.Fprintf(m.w, "read %#x %d\n", a, servedPage)
	m.w.Flush()
	line, err := m.r.ReadString('\n')
	if err != nil {
		m.err = fmt.Errorf("unwind: memory server went away: %v", err)
		return nil
	}
	line = strings.TrimSpace(line)
	var p []byte
	if line != "fault" {
		p, err = hex.DecodeString(line)
		if err != nil || len(p) != servedPage {
			m.err = fmt.Errorf("unwind: bad memory reply for %#x", a)
			return nil
		}
	}
	m.cache[a] = p
	return p
}

func (m *servedMem) ReadAt(p []byte, addr uint64) error {
	for done := 0; done < len(p); {
		a := addr + uint64(done)
		pg := m.page(a &^ (servedPage - 1))
		if pg == nil {
			return &target.FaultError{Addr: addr, Len: len(p), Err: errors.New("not readable in the target")}
		}
		done += copy(p[done:], pg[a&(servedPage-1):])
	}
	return nil
}
