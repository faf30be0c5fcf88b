package lineage

import (
	"context"
	"encoding/binary"
	"slices"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/lineageraw"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// Reading every goroutine with its stack in one pass (GoroutineStacks).
//
// A live process is read with no thread stopped, by the ABI's reader
// procedure (doc/lineage-abi.md, section 13) extended to stacks
// (lineageabi.ReadLive): goroutines are read in batches, and each batch
// costs one vectored read (process_vm_readv, up to 1024 ranges) of the g's
// and records, one of the stacks (each copied from its saved SP to the
// top, bounded by maxStackCopy) and one that re-reads what validates them;
// a goroutine that changed meanwhile is read again. Stacks are walked by
// frame pointers in the copies. Goroutines parked at the same place have
// equal walks, which are kept once and symbolized once, so that ten
// thousand goroutines blocked in one function cost one symbolization.

// maxStackCopy bounds the bytes of a parked goroutine's stack copied in one
// piece; a walk that goes beyond reads the rest word by word.
const maxStackCopy = 64 << 10

// GoroutineStacks reads every goroutine that is not dead, as Goroutines
// does, and walks and symbolizes the stack of each (Goroutine.Stack) in the
// same read: a goroutine of a live process is kept only if neither it nor
// its stack changed while it was read, and the whole read costs a few
// vectored reads per hundred goroutines, not several per goroutine. A
// goroutine running on a thread of a live process has no stack
// (StackErr is ErrRunning): a Stopped, or a core, gives it its thread's.
//
// Goroutines parked at the same place share one Stack slice: callers must
// not modify it.
func (p *Process) GoroutineStacks(ctx context.Context) (*Snapshot, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	s, err := p.goroutineStacks(ctx)
	return s, p.publicError(err)
}

func (p *Process) goroutineStacks(ctx context.Context) (*Snapshot, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	onThread := p.onThreads(v)
	s := &Snapshot{}
	if p.pid != 0 && p.threads == nil {
		// A running process.
		stack.Table(p.exe.Bin) // decoded once, before the read
		var c *converter
		st, err := lineageabi.ReadLiveEach(v, func() lineageabi.Visit[*stack.Walk] {
			return (&parkedWalker{p: p}).walk
		}, func(n int) { c = p.newConverter(n) }, func(lg *lineageabi.Goroutine, w *stack.Walk) {
			c.add(lg, w, true)
		})
		if err != nil {
			return nil, err
		}
		s.Torn, s.Retried, s.Reads, s.stats = st.Torn, st.Retried, st.Calls, st
		s.Goroutines = c.done(onThread)
	} else {
		// A core or a stopped process: one instant, read through a page
		// cache.
		gs, torn, err := v.Goroutines()
		if err != nil {
			return nil, err
		}
		s.Torn = torn
		pw := parkedWalker{p: p}
		walks := make([]*stack.Walk, len(gs))
		for i := range gs {
			if regs, ok := lineageabi.SavedRegs(&gs[i]); ok {
				pw.scratch.Unwind(p.mem, p.exe.Bin, p.exe.Bias, regs)
				walks[i] = pw.intern()
			}
		}
		s.Goroutines = p.convert(gs, walks, onThread)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	frames := map[*stack.Walk][]Frame{}
	for _, g := range s.Goroutines {
		p.fillStack(g, frames)
	}
	return s, nil
}

// fillStack sets g's Stack and StackErr, and what they tell of it: whether
// a finalizer or cleanup goroutine runs user code (System), and the
// function a go statement named where its wrapper's code does not say.
func (p *Process) fillStack(g *Goroutine, frames map[*stack.Walk][]Frame) {
	// A goroutine in a system call or cgo call is walked from where it
	// entered it, as the runtime's dump does, even while its thread runs.
	onThread := g.Thread != 0 && g.State != StateSyscall
	switch {
	case onThread && p.threads != nil:
		for _, th := range p.threads { // a core's or a stopped process's
			if th.TID == g.Thread {
				w := stack.Unwind(p.mem, p.exe.Bin, p.exe.Bias, th.Regs)
				g.Stack = toFrames(stack.SymbolizeWalk(p.exe.Bin, p.exe.Bias, w))
				g.StackErr = stackEnd(w.Stop)
			}
		}
	case g.walk != nil:
		f, ok := frames[g.walk]
		if !ok {
			f = toFrames(stack.SymbolizeResumed(p.exe.Bin, p.exe.Bias, *g.walk))
			f = f[:len(f):len(f)]
			frames[g.walk] = f
		}
		g.Stack, g.StackErr = f, stackEnd(g.walk.Stop)
	case g.State == StateRunning || onThread:
		g.StackErr = ErrRunning
	default:
		g.StackErr = &StackEndError{Reason: "no saved registers"}
	}
	if g.System {
		start := g.Start.Function
		if g.Wrapper.Function != "" {
			start = g.Wrapper.Function
		}
		g.System = systemRunning(start, g.Stack)
	}
	p.nameFromStack(g)
}

func stackEnd(stop string) error {
	if stop == "" {
		return nil
	}
	return &StackEndError{Reason: stop}
}

// nameFromStack names the function a goroutine's go statement named from
// its stack when the wrapper it starts in calls it through a register
// ("go f(x)" with f a function value), which the wrapper's code does not
// resolve (stack.StartNamer.FromStack).
func (p *Process) nameFromStack(g *Goroutine) {
	if g.Wrapper.Function != "" || len(g.Stack) == 0 || !p.unresolved(g.startPC) {
		return
	}
	sy := p.sym
	sy.mu.Lock()
	sn := sy.names.FromStack(g.startPC, stackLocs(g.Stack))
	sy.mu.Unlock()
	if sn != nil {
		g.Wrapper = g.Start
		g.Start = Site{PC: sn.Entry + p.exe.Bias, Function: sn.Fn.Func, File: sn.Fn.File, Line: sn.Fn.Line}
	}
}

// unresolved reports whether start PC pc is a wrapper whose callee its
// code does not show.
func (p *Process) unresolved(pc uint64) bool {
	sy := p.sym
	sy.mu.Lock()
	defer sy.mu.Unlock()
	return sy.names.Name(pc).Unresolved
}

// stackLocs are frames as the stack package takes them.
func stackLocs(frames []Frame) []stack.Loc {
	out := make([]stack.Loc, len(frames))
	for i, f := range frames {
		out[i] = stack.Loc{PC: f.PC, Func: f.Function, File: f.File, Line: f.Line, Offset: f.Offset, Inlined: f.Inlined, Signal: f.Signal, Wrapper: f.Wrapper}
	}
	return out
}

// A parkedWalker walks the stacks of parked goroutines, batch after batch,
// copying each batch's stacks into the same buffer. Goroutines parked at
// the same place have the same walk, which is kept once.
type parkedWalker struct {
	p       *Process
	buf     []byte
	scratch stack.Walk
	walks   map[string]*stack.Walk
	key     []byte

	// Per-goroutine scratch of a batch.
	walked []bool
	bufs   [][]byte
	addrs  []uint64
	regs   []target.Regs
	errs   []error
}

// reuse returns s resized to n zero elements, reusing its array if it can.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// intern returns the kept walk equal to pw.scratch.
func (pw *parkedWalker) intern() *stack.Walk {
	w := &pw.scratch
	pw.key = w.AppendKey(pw.key[:0])
	pw.key = append(pw.key, w.Stop...)
	if k, ok := pw.walks[string(pw.key)]; ok {
		return k
	}
	if pw.walks == nil {
		pw.walks = map[string]*stack.Walk{}
	}
	k := &stack.Walk{PCs: slices.Clone(w.PCs), Stop: w.Stop, Signal: slices.Clone(w.Signal)}
	pw.walks[string(pw.key)] = k
	return k
}

// walk walks the stack of each goroutine of gs that is not running, from
// its saved registers, copying each stack (from the saved SP to the
// stack's top, bounded) in one vectored read for the batch.
func (pw *parkedWalker) walk(gs []*lineageabi.Goroutine) []*stack.Walk {
	p := pw.p
	out := make([]*stack.Walk, len(gs))
	n := len(gs)
	pw.walked = reuse(pw.walked, n)
	pw.bufs = reuse(pw.bufs, n)
	pw.addrs = reuse(pw.addrs, n)
	pw.regs = reuse(pw.regs, n)
	pw.errs = reuse(pw.errs, n)
	walk, bufs, addrs, regs, errs := pw.walked, pw.bufs, pw.addrs, pw.regs, pw.errs
	var total uint64
	for i, g := range gs {
		r, ok := lineageabi.SavedRegs(g)
		if !ok {
			continue
		}
		regs[i] = r
		walk[i] = true
		if r.SP >= g.StackLo && r.SP < g.StackHi {
			addrs[i] = r.SP
			total += min(g.StackHi-r.SP, maxStackCopy)
		}
	}
	// The copies are needed only until the stacks are walked: the next
	// batch reuses the buffer (its pages already faulted in).
	if uint64(cap(pw.buf)) < total {
		pw.buf = make([]byte, total)
	}
	buf := pw.buf[:total]
	for i, g := range gs {
		if addrs[i] != 0 {
			n := min(g.StackHi-addrs[i], maxStackCopy)
			bufs[i], buf = buf[:n:n], buf[n:]
		}
	}
	if h := lineageraw.TestHookWalk; h != nil {
		h()
	}
	target.ReadV(p.mem, bufs, addrs, errs)
	sc := &stackCopy{m: p.mem}
	for i := range gs {
		if !walk[i] {
			continue
		}
		sc.base, sc.b = addrs[i], bufs[i]
		m := target.Mem(sc)
		if errs[i] != nil {
			m = p.mem
		}
		pw.scratch.Unwind(m, p.exe.Bin, p.exe.Bias, regs[i])
		out[i] = pw.intern()
	}
	return out
}

// stackCopy serves reads from a copy of part of a stack, and the rest from m.
type stackCopy struct {
	base uint64
	b    []byte
	m    target.Mem
}

func (c *stackCopy) ReadAt(p []byte, addr uint64) error {
	if addr >= c.base && addr-c.base <= uint64(len(c.b)) && uint64(len(p)) <= uint64(len(c.b))-(addr-c.base) {
		copy(p, c.b[addr-c.base:])
		return nil
	}
	return c.m.ReadAt(p, addr)
}

func (c *stackCopy) Word(addr uint64) (uint64, error) {
	if addr >= c.base && addr-c.base <= uint64(len(c.b)) && uint64(len(c.b))-(addr-c.base) >= 8 {
		return binary.LittleEndian.Uint64(c.b[addr-c.base:]), nil
	}
	return target.Word(c.m, addr)
}

func init() {
	lineageraw.Goroutine = func(g any) (*lineageabi.Goroutine, *stack.Walk) {
		lg := g.(*Goroutine)
		return lg.raw, lg.walk
	}
	lineageraw.Stats = func(s any) lineageabi.LiveStats { return s.(*Snapshot).stats }
	lineageraw.KeepRaw = func(p any) { p.(*Process).keepRaw = true }
	lineageraw.Locs = func(frames any) []stack.Loc { return stackLocs(frames.([]Frame)) }
	lineageraw.OpenShared = func(pid int, bin *gobin.Binary, bias uint64, abi *lineageabi.ABI, labels bool) any {
		p := newProcess(pid, &opentarget.Exe{Bin: bin, Bias: bias}, abi, target.ProcMem(pid), &Options{NoLabels: !labels})
		p.shared, p.keepRaw = true, true
		return p
	}
}
