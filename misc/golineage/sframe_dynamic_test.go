package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/sframe"
	"fpsafe.dev/misc/lineage"
	"golang.org/x/arch/x86/x86asm"
)

// TestSFrameDynamic is the dynamic check of the linker's SFrame table: it
// stops every thread of running programs many times, unwinds each with
// the table alone (sframe.Unwind, reading the stopped program's memory),
// and checks the chain against the frame-pointer chain the fork makes
// exact. Where the thread is in a frame record (fpchain.InFrameRecord) the
// two must be equal, frame for frame; where it is not (a frameless leaf,
// a prologue or an epilogue), the SFrame chain must be the frame-pointer
// chain with the callers the frame-pointer walk skips put back, and those
// recovered callers are counted. Both chains are cut where they reach C
// code, which the table does not describe; every SFrame chain must end at
// an outermost or signal frame, or at a C-to-Go entry. The programs are
// the busy fixture (frameless leaves under preemption) and fpcheck's
// stress corpus (GC, stack growth, syscalls, signals, cgo calls and
// callbacks, a C-created thread), linked internally so that the Go
// linker writes the whole table, and externally. It skips unless the fixture's toolchain
// (GOLINEAGE_FIXTURE_GO) emits a PT_GNU_SFRAME segment.
func TestSFrameDynamic(t *testing.T) {
	for _, prog := range []struct {
		name string
		exe  func(t *testing.T) string
		args []string
	}{
		{"busy", func(t *testing.T) string { return fixture(t, "busy") }, nil},
		{"stress", func(t *testing.T) string {
			return fixtureFrom(t, "../fpcheck/testdata/stress", "stress", "-ldflags=-linkmode=internal")
		}, []string{"-d", "4s"}},
		// Linked by the system linker: the table the Go linker rewrites
		// after a GNU ld 2.40 link (doc/sframe.md, "External linking").
		{"stress-hostlinked", func(t *testing.T) string {
			return fixtureFrom(t, "../fpcheck/testdata/stress", "stress-hostlinked", "-ldflags=-linkmode=external")
		}, []string{"-d", "4s"}},
	} {
		t.Run(prog.name, func(t *testing.T) {
			exe := prog.exe(t)
			b, err := gobin.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			sd, err := b.SFrame()
			if err != nil {
				t.Skipf("skipping: %v; set GOLINEAGE_FIXTURE_GO to a toolchain that emits SFrame", err)
			}
			sec, err := sframe.Decode(sd.Data, sd.Addr)
			if err != nil {
				t.Fatal(err)
			}
			var pid int
			if prog.args == nil {
				pid = start(t, exe).pid()
			} else {
				cmd := exec.Command(exe, prog.args...)
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Wait()
				pid = cmd.Process.Pid
			}
			ctx := context.Background()
			p, err := lineage.OpenPID(ctx, pid, &lineage.Options{NoLineage: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var c sframeCounts
			deadline := time.Now().Add(3 * time.Second)
			for stops := 0; stops < 200 && time.Now().Before(deadline); stops++ {
				s, err := p.Stop(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, th := range s.Threads() {
					c.thread(t, b, sec, s, th.Registers)
				}
				s.Resume()
				c.stops++
				time.Sleep(time.Millisecond)
			}
			t.Logf("SFrame dynamic check (%s): %d stops, %d thread stacks, %d frames; %d equal to the frame-pointer chain, %d with callers the frame-pointer walk misses (%d frames; %d stacks stopped in a frameless leaf); %d reaching C; %d ending in a signal handler, %d at a stack-switch root where the frame-pointer chain goes on; %d threads in C or the vDSO",
				prog.name, c.stops, c.stacks, c.frames, c.equal, c.recovered, c.missed, c.leaf, c.toC, c.sigStop, c.rootStop, c.outside)
			if c.bad > 0 {
				t.Errorf("%d SFrame chains disagree with the frame-pointer chain or end early (first above)", c.bad)
			}
			if c.stacks == 0 {
				t.Fatal("no thread stack was unwound")
			}
		})
	}
}

// fixtureFrom builds the package in dir with the fixture toolchain.
func fixtureFrom(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), name)
	// Built in dir, inside its own module: the stress corpus is in
	// misc/fpcheck's, which this module cannot name by directory.
	cmd := exec.Command(fixtureGo(), append(append([]string{"build", "-o", exe}, flags...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("skipping: building %s: %v\n%s", dir, err, out)
	}
	return exe
}

// maxFrames bounds both walks, above the stress corpus's deepest recursion.
const maxFrames = 1 << 16

type sframeCounts struct {
	stops, stacks, frames, equal, recovered, missed, leaf, toC, sigStop, rootStop, outside, bad int
}

func (c *sframeCounts) thread(t *testing.T, b *gobin.Binary, sec *sframe.Section, mem lineage.Memory, th lineage.Registers) {
	read := func(addr uint64) (uint64, error) {
		var w [8]byte
		if err := mem.ReadAt(w[:], addr); err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint64(w[:]), nil
	}
	regs := sframe.Regs{PC: th.PC, SP: th.SP, FP: th.FP, LR: th.LR}
	// goFunc returns the Go function at pc: C code linked internally has
	// pclntab entries but no SP-delta table, and no FDE.
	goFunc := func(pc uint64) *gobin.Func {
		f := b.FindFunc(pc)
		if f == nil {
			return nil
		}
		if runs, _ := f.SPDeltaRuns(); len(runs) == 0 {
			return nil
		}
		return f
	}
	f := goFunc(regs.PC)
	if f == nil {
		c.outside++ // the vDSO, or C code
		return
	}
	sf, err := sec.Unwind(regs, read, maxFrames, func(frame sframe.Regs, cfa uint64) (sframe.Regs, bool) {
		switch {
		case b.FuncNameIs(frame.PC, "runtime.sigreturn__sigaction"):
			return signalRegs(b.Arch, frame.SP, read)
		case cfa != 0:
			return signalRegs(b.Arch, cfa, read)
		}
		return sframe.Regs{}, false // a handler whose rule gives no CFA
	})
	fp := []uint64{regs.PC}
	for frame := regs.FP; frame != 0 && len(fp) < maxFrames; {
		ra, err1 := read(frame + 8)
		next, err2 := read(frame)
		if err1 != nil || err2 != nil || ra == 0 {
			break
		}
		fp = append(fp, ra)
		frame = next
	}
	// Cut both chains where they reach C (a return address in no Go
	// function): the table describes Go code only.
	toC := false
	goOnly := func(pcs []uint64) []uint64 {
		for i, pc := range pcs[1:] {
			if goFunc(pc-1) == nil {
				toC = true
				return pcs[:i+1]
			}
		}
		return pcs
	}
	sf, fp = goOnly(sf), goOnly(fp)
	if toC {
		c.toC++
		if errors.Is(err, sframe.ErrNoFDE) {
			err = nil
		}
	}
	c.stacks++
	c.frames += len(sf)
	last := b.FindFunc(sf[len(sf)-1] - 1)
	if len(sf) == 1 {
		last = f
	}
	_, cEntry := fpchain.CEntries[last.Name]
	// A thread stopped in a Go function that C code called directly, such
	// as _cgo_topofstack (cgo's C wrappers call it after a callback): its
	// caller is C, and both chains end at it.
	calledFromC := toC && len(sf) == 1
	if err != nil || !fpchain.IsRoot(last.Name) && !slices.Contains(fpchain.SignalFrames, last.Name) && !(toC && (cEntry || calledFromC)) {
		c.report(t, b, "SFrame chain ends early", sf, fp, err)
		return
	}
	if len(sf) < len(fp) && fpchain.IsRoot(last.Name) && !slices.Contains(fpchain.StackRoots, last.Name) {
		// The table ends the chain at a documented root (morestack, mcall)
		// where the frame-pointer walk still finds the goroutine's frames:
		// the window before the root clears the frame pointer. Counted.
		c.rootStop++
		return
	}
	if slices.Contains(fpchain.SignalFrames, last.Name) {
		// A handler marked outermost: the table gives no way to the
		// kernel's signal frame, so the interrupted frames are not
		// compared. Counted, not failed.
		c.sigStop++
		return
	}
	inRecord := fpchain.InFrameRecord(fpchain.Frame{Arch: b.Arch, PC: regs.PC, HaveRegs: true, SPDelta: f.SPDelta(regs.PC), SP: regs.SP, FP: regs.FP})
	switch extra, ok := fpSubchain(b, sf, fp, inRecord); {
	case ok && extra == 0:
		c.equal++
	case ok:
		c.recovered++
		c.missed += extra
		if f.SPDelta(regs.PC) == 0 || f.SPDelta(regs.PC) == -1 {
			c.leaf++
		}
	default:
		c.report(t, b, fmt.Sprintf("chains differ (in frame record: %v)", inRecord), sf, fp, err)
	}
}

// fpSubchain reports whether the frame-pointer chain fp is the SFrame chain
// sf with only the callers a frame-pointer walk cannot see left out, and
// how many: the innermost frame's caller when the thread is not in its
// frame record; the caller of a frameless function that the signal
// handler interrupted with an injected call (asyncPreempt above a leaf);
// and the caller of a function that made its call before building its
// frame record (the call to morestack in a prologue, which leaves the
// frame-pointer register at the caller's record).
func fpSubchain(b *gobin.Binary, sf, fp []uint64, inRecord bool) (extra int, ok bool) {
	if len(sf) == 0 || len(fp) == 0 || sf[0] != fp[0] {
		return 0, false
	}
	injected := func(i int) bool { // sf[i] is in a function an injected call interrupted
		f := b.FindFunc(sf[i-1] - min(uint64(i-1), 1))
		return f != nil && slices.Contains(fpchain.InjectedCalls, f.Name)
	}
	unframed := func(i int) bool { // sf[i] made its call with no frame allocated
		f := b.FindFunc(sf[i] - 1)
		return f != nil && f.SPDelta(sf[i]-1) == 0
	}
	// match matches sf[i:] against fp[j:], trying at each place a caller
	// may be missing both readings (identical PCs, as in a recursion, make
	// a greedy match ambiguous).
	var match func(i, j int) (int, bool)
	match = func(i, j int) (int, bool) {
		for ; i < len(sf); i++ {
			canSkip := i == 1 && !inRecord || i >= 2 && (injected(i-1) || unframed(i-1))
			same := j < len(fp) && sf[i] == fp[j]
			switch {
			case same && canSkip:
				if e, ok := match(i+1, j+1); ok {
					return e, true
				}
				e, ok := match(i+1, j)
				return e + 1, ok
			case same:
				j++
			case canSkip:
				e, ok := match(i+1, j)
				return e + 1, ok
			default:
				return 0, false
			}
		}
		return 0, j == len(fp)
	}
	return match(1, 1)
}

// signalRegs reads the interrupted registers from the kernel's signal
// frame at sp (linux/amd64: struct rt_sigframe, the ucontext first; its
// mcontext's general registers start 40 bytes in, RBP, RSP and RIP at
// indexes 10, 15 and 16). arm64 is not read here: it stops the walk.
func signalRegs(arch string, sp uint64, read func(uint64) (uint64, error)) (sframe.Regs, bool) {
	if arch != "amd64" {
		return sframe.Regs{}, false
	}
	const gregs = 40
	var r [3]uint64
	for i, idx := range []uint64{16, 15, 10} {
		v, err := read(sp + gregs + 8*idx)
		if err != nil {
			return sframe.Regs{}, false
		}
		r[i] = v
	}
	return sframe.Regs{PC: r[0], SP: r[1], FP: r[2]}, true
}

func (c *sframeCounts) report(t *testing.T, b *gobin.Binary, what string, sf, fp []uint64, err error) {
	c.bad++
	if c.bad > 3 {
		return
	}
	name := func(pcs []uint64) []string {
		var out []string
		for i, pc := range pcs {
			lookup := pc
			if i > 0 {
				lookup--
			}
			if f := b.FindFunc(lookup); f != nil {
				out = append(out, fmt.Sprintf("%s+%#x", f.Name, pc-f.Entry))
			} else {
				out = append(out, fmt.Sprintf("%#x", pc))
			}
		}
		return out
	}
	t.Errorf("%s (error %v):\nSFrame: %v\nFP:     %v", what, err, name(sf), name(fp))
}

// TestFPSubchainMorestack checks fpSubchain on a thread stopped in
// morestack_noctxt, called from a prologue whose frame record does not
// exist yet: the frame-pointer walk misses both that function and its
// caller, whose record the frame-pointer register still holds. The
// stack is built from the busy fixture's own code: main.main's call to
// morestack, a PC inside runtime.main's frame, and runtime.goexit.
func TestFPSubchainMorestack(t *testing.T) {
	b, err := gobin.Open(fixture(t, "busy"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Arch != "amd64" {
		t.Skipf("the fixture is %s; the call is decoded for amd64", b.Arch)
	}
	leaf, caller, outer, root := b.LookupFunc("runtime.morestack_noctxt"), b.LookupFunc("main.main"), b.LookupFunc("runtime.main"), b.LookupFunc("runtime.goexit")
	if leaf == nil || caller == nil || outer == nil || root == nil {
		t.Fatal("the fixture lacks runtime.morestack_noctxt, main.main, runtime.main or runtime.goexit")
	}
	code, err := b.Code(caller)
	if err != nil {
		t.Fatal(err)
	}
	var ret uint64 // main.main's return address from its call to morestack
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			t.Fatalf("decoding main.main+%#x: %v", off, err)
		}
		off += inst.Len
		if rel, ok := inst.Args[0].(x86asm.Rel); ok && inst.Op == x86asm.CALL && caller.Entry+uint64(off)+uint64(int64(rel)) == leaf.Entry {
			ret = caller.Entry + uint64(off)
			break
		}
	}
	if ret == 0 {
		t.Fatal("main.main does not call runtime.morestack_noctxt")
	}
	var inOuter uint64 // a PC in runtime.main's body, where its frame exists
	if runs, ok := outer.SPDeltaRuns(); ok {
		for _, r := range runs {
			if r.Value > 0 {
				inOuter = r.Start + 1
				break
			}
		}
	}
	if inOuter == 0 {
		t.Fatal("runtime.main has no PC with a frame")
	}
	sf := []uint64{leaf.Entry, ret, inOuter, root.Entry + 1}
	for _, c := range []struct {
		fp    []uint64
		extra int
		ok    bool
	}{
		{[]uint64{sf[0], sf[3]}, 2, true},        // the register holds runtime.main's record
		{[]uint64{sf[0], sf[2], sf[3]}, 1, true}, // a walk that found runtime.main
		{[]uint64{sf[0]}, 0, false},              // runtime.goexit cannot be missed
		{[]uint64{sf[0], sf[2]}, 0, false},       // nor the chain's end
	} {
		extra, ok := fpSubchain(b, sf, c.fp, false)
		if ok != c.ok || ok && extra != c.extra {
			t.Errorf("fpSubchain(%#x, %#x) = %d, %v; want %d, %v", sf, c.fp, extra, ok, c.extra, c.ok)
		}
	}
}
