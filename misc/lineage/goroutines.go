package lineage

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// Site is a code location: a goroutine's start function, or the go
// statement that created it.
type Site struct {
	PC       uint64 // runtime address; 0 if unknown
	Function string // "" if PC is not in Go code
	File     string
	Line     int
}

// String is "function file:line", or the PC for code outside Go.
func (s Site) String() string {
	if s.Function == "" {
		return fmt.Sprintf("%#x", s.PC)
	}
	return fmt.Sprintf("%s %s:%d", s.Function, s.File, s.Line)
}

// Ancestor is one goroutine of a lineage: the parent first, then its
// creator, and so on. Only the parent's ID is known (0 beyond).
type Ancestor struct {
	ID        uint64
	Start     Site // the function the go statement named (as Goroutine.Start)
	Wrapper   Site // the compiler's wrapper it started in (as Goroutine.Wrapper)
	CreatedBy Site // the go statement that created it
}

// State is what a goroutine is doing, by the runtime's status.
type State string

// The states. A goroutine a live read finds on a thread is StateRunning
// (or StateSyscall); StateUnknown is a status this package does not know
// (a corrupt core, or a newer runtime).
const (
	StateIdle      State = "idle"
	StateRunnable  State = "runnable"
	StateRunning   State = "running"
	StateSyscall   State = "syscall" // in a system call or a cgo call
	StateWaiting   State = "waiting" // parked: WaitReason says why
	StateCopystack State = "copystack"
	StatePreempted State = "preempted"
	StateLeaked    State = "leaked"
	StateUnknown   State = "?"
)

// WaitKind is the kind of object a waiting goroutine waits on.
type WaitKind string

// The kinds of wait object.
const (
	WaitNone      WaitKind = ""          // nothing the ABI publishes
	WaitChan      WaitKind = "chan"      // a channel send or receive
	WaitSelect    WaitKind = "select"    // a select
	WaitMutex     WaitKind = "mutex"     // sync.Mutex
	WaitRWMutex   WaitKind = "rwmutex"   // sync.RWMutex
	WaitWaitGroup WaitKind = "waitgroup" // sync.WaitGroup
	WaitCond      WaitKind = "cond"      // sync.Cond
	WaitSema      WaitKind = "sema"      // another semaphore (the runtime's own)
)

// WaitObject is what a blocked goroutine waits on.
type WaitObject struct {
	Kind  WaitKind
	Addr  uint64   // the lock, notify list or semaphore (not for chan, select)
	Chans []uint64 // the channels of a channel operation or select
}

// Label is one pprof label (runtime/pprof.Do, SetGoroutineLabels).
type Label struct{ Key, Value string }

// Goroutine is one goroutine.
type Goroutine struct {
	ID, Parent uint64 // Parent 0: the runtime's own, or goroutine 1
	State      State
	WaitReason string // for StateWaiting: "chan receive", "sync.Mutex.Lock", ...
	// WaitSince is about when the goroutine began to wait, by the wall
	// clock of the machine reading it, as the runtime's own dump knows it
	// ("[chan receive, 5 minutes]"): the start of the first garbage
	// collection that found the goroutine blocked (the runtime reads no
	// clock when a goroutine parks). Zero before a collection saw it, and
	// for a core.
	WaitSince time.Time
	Wait      WaitObject
	Labels    []Label

	// Start is the function the go statement names: for "go f(x)",
	// f, although the goroutine starts in a wrapper the compiler made to
	// call f with x (Wrapper); for "go func() {...}()", the literal
	// (main.f.func1). Start.PC is its entry, 0 if the compiler inlined it
	// into the wrapper. Where the wrapper calls it through a register
	// (its code does not name it), only GoroutineStacks can name it, from
	// the stack of a goroutine that has run; otherwise Start is the
	// wrapper itself (main.f.gowrap1) and Wrapper is zero.
	Start Site
	// Wrapper is the compiler-generated function the goroutine starts
	// in (main.f.gowrap1), zero if it starts in Start itself. Its PC is
	// the goroutine's start PC (the runtime's g.startpc).
	Wrapper   Site
	CreatedBy Site // the go statement that created it; zero for the runtime's own
	// Ancestors are its creators, its parent first; Truncated if there
	// were more. Goroutines with the same ancestry (siblings) share one
	// slice: callers must not modify it.
	Ancestors []Ancestor
	Truncated bool

	// System reports whether the runtime counts this goroutine as its
	// own (runtime.isSystemGoroutine): it starts in the runtime (GC
	// workers, the scavenger, the finalizer goroutine while it runs no
	// finalizer). The program's own goroutine dump (runtime.Stack with
	// all set, runtime/pprof's goroutine profile at debug=2) leaves these
	// goroutines out unless GOTRACEBACK is system or higher.
	System bool

	// Thread is the thread running the goroutine, if a read saw it on
	// one (0 otherwise).
	Thread int

	// Stack is the goroutine's stack, innermost first, if the read
	// that gave the goroutine walked it (GoroutineStacks); see Frame.Hidden
	// for the frames the program's own dump prints. StackErr says why
	// Stack is nil (a goroutine running in a live process: ErrRunning),
	// or why the walk ended before the stack's root (*StackEndError).
	Stack    []Frame
	StackErr error

	regs    target.Regs
	hasRegs bool
	startPC uint64                // the runtime's g.startpc
	raw     *lineageabi.Goroutine // golineage's only (keepRaw); nil for a Region's goroutine
	walk    *stack.Walk           // the walk Stack came from (shared by alike goroutines)
}

// Snapshot is what one read of every goroutine found.
type Snapshot struct {
	// Goroutines in ascending ID order, each once.
	Goroutines []*Goroutine
	// Torn counts goroutines left out because their records kept changing
	// while read (a live process only).
	Torn int
	// Retried counts goroutines read again because they changed while
	// read, and Reads the vectored reads (process_vm_readv calls) of the
	// goroutines (and their stacks): a live process only.
	Retried, Reads int

	stats lineageabi.LiveStats
}

// Goroutines reads every goroutine that is not dead, without stacks (see
// GoroutineStacks). In a live process the read is not one instant: each
// goroutine is consistent in itself.
func (p *Process) Goroutines(ctx context.Context) (*Snapshot, error) {
	s, err := p.goroutines(ctx)
	return s, p.publicError(err)
}

func (p *Process) goroutines(ctx context.Context) (*Snapshot, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{}
	if p.pid != 0 && p.threads == nil {
		// A running process: in batches of vectored reads, as
		// GoroutineStacks reads it, without the stacks.
		var c *converter
		st, err := lineageabi.ReadLiveEach(v, nil, func(n int) { c = p.newConverter(n) },
			func(lg *lineageabi.Goroutine, _ struct{}) { c.add(lg, nil, true) })
		if err != nil {
			return nil, err
		}
		s.Torn, s.Retried, s.Reads, s.stats = st.Torn, st.Retried, st.Calls, st
		s.Goroutines = c.done(p.onThreads(v))
		return s, nil
	}
	gs, torn, err := v.Goroutines()
	if err != nil {
		return nil, err
	}
	s.Torn = torn
	s.Goroutines = p.convert(gs, nil, p.onThreads(v))
	return s, nil
}

// onThreads maps goroutines to the threads running them, by the threads'
// regions.
func (p *Process) onThreads(v *lineageabi.View) map[uint64]int {
	m := map[uint64]int{}
	for _, tid := range v.Threads() {
		if rec, err := v.Thread(tid); err == nil && rec != nil {
			m[rec.Goid] = int(tid)
		}
	}
	return m
}

// convert converts the reader's goroutines (and their walks, if walks is
// not nil), in ID order, each once (see converter.done).
func (p *Process) convert(gs []lineageabi.Goroutine, walks []*stack.Walk, onThread map[uint64]int) []*Goroutine {
	c := p.newConverter(len(gs))
	for i := range gs {
		var w *stack.Walk
		if walks != nil {
			w = walks[i]
		}
		c.add(&gs[i], w, false)
	}
	return c.done(onThread)
}

// sortByID sorts goroutines by ID, keeping the order of equal IDs.
func sortByID(gs []*Goroutine) {
	slices.SortStableFunc(gs, func(a, b *Goroutine) int { return cmp.Compare(a.ID, b.ID) })
}

// A converter converts the goroutines of one read, one at a time (a live
// read converts each as it is read, and lets the reader's go): it allocates them
// together, and their ancestor lists once per distinct ancestry.
type converter struct {
	p      *Process
	out    []*Goroutine
	slab   []Goroutine
	chains map[string][]Ancestor
	key    []byte
	// The machine's monotonic and wall clocks at the read (a live
	// process), for WaitSince: the runtime's nanotime is CLOCK_MONOTONIC
	// on Linux, one clock for the machine.
	mono int64
	wall time.Time
}

// newConverter returns a converter for a read of about n goroutines.
func (p *Process) newConverter(n int) *converter {
	c := &converter{p: p, chains: map[string][]Ancestor{}}
	if n > 0 {
		c.slab = make([]Goroutine, n)
		c.out = make([]*Goroutine, 0, n)
	}
	if p.pid != 0 {
		c.mono, c.wall = target.MonotonicNow(), time.Now()
	}
	return c
}

// add converts lg, whose stack walked as w. transient: lg's record is the
// reader's to reuse (lineageabi.ReadLiveEach), so a Process that keeps
// the reader's goroutines (keepRaw) keeps a copy.
func (c *converter) add(lg *lineageabi.Goroutine, w *stack.Walk, transient bool) {
	if c.p.keepRaw && transient {
		cp := *lg
		cp.Record = lg.Record.Clone()
		lg = &cp
	}
	g := c.goroutine(lg)
	if !c.p.keepRaw {
		g.raw = nil
	}
	g.walk = w
	c.out = append(c.out, g)
}

// done returns the goroutines converted, in ID order, each once: a live
// read may see a goroutine twice (its g reused meanwhile), and the first
// reading is kept. onThread gives each the thread running it.
func (c *converter) done(onThread map[uint64]int) []*Goroutine {
	out := c.out
	sortByID(out)
	out = slices.CompactFunc(out, func(a, b *Goroutine) bool { return a.ID == b.ID })
	for _, g := range out {
		g.Thread = onThread[g.ID]
	}
	return out
}

// goroutine converts the reader's goroutine.
func (c *converter) goroutine(lg *lineageabi.Goroutine) *Goroutine {
	if len(c.slab) == 0 {
		// More goroutines than the read expected: the next ones are
		// allocated together too.
		c.slab = make([]Goroutine, max(64, len(c.out)/4))
	}
	g := &c.slab[0]
	c.slab = c.slab[1:]
	c.p.lineageOf(g, lg.Record, c)
	g.raw = lg
	g.State = State(lineageabi.StatusName(lg.Status))
	if lg.Status == lineageabi.StatusWaiting {
		g.WaitReason = lg.WaitReason
		if c.mono != 0 && lg.WaitSince > 0 && lg.WaitSince <= c.mono {
			g.WaitSince = c.wall.Add(-time.Duration(c.mono - lg.WaitSince))
		}
	}
	for _, l := range lg.Labels {
		g.Labels = append(g.Labels, Label(l))
	}
	switch {
	case len(lg.WaitChans) > 0 && lg.Select:
		g.Wait = WaitObject{Kind: WaitSelect, Chans: lg.WaitChans}
	case len(lg.WaitChans) > 0:
		g.Wait = WaitObject{Kind: WaitChan, Chans: lg.WaitChans}
	case lg.WaitAddr != 0:
		kind, addr := lineageabi.SemaObject(lg.WaitReason, lg.WaitAddr)
		g.Wait = WaitObject{Kind: WaitKind(kind), Addr: addr}
	}
	g.regs, g.hasRegs = lineageabi.SavedRegs(lg)
	return g
}

// fromRecord is the lineage part of a goroutine, from its record.
func (p *Process) fromRecord(rec *lineageabi.Record) *Goroutine {
	g := new(Goroutine)
	p.lineageOf(g, rec, nil)
	return g
}

// lineageOf sets the lineage part of g from its record (ID, Parent, Start,
// Wrapper, System, CreatedBy, Ancestors, Truncated). c, if not nil, shares
// ancestor lists between the goroutines it converts.
func (p *Process) lineageOf(g *Goroutine, rec *lineageabi.Record, c *converter) {
	g.ID, g.Parent, g.Truncated, g.startPC = rec.Goid, rec.ParentGoid, rec.Truncated(), rec.StartPC
	g.Start, g.Wrapper, g.System = p.start(rec.StartPC)
	if lineageabi.HasCreator(rec) {
		g.CreatedBy = p.goSite(rec.GoPC)
	}
	if len(rec.Anc) == 0 {
		return
	}
	var key []byte
	if c != nil {
		key = c.key[:0]
		for i, a := range rec.Anc {
			key = binary.LittleEndian.AppendUint64(key, a.Goid)
			key = binary.LittleEndian.AppendUint64(key, a.StartPC)
			key = binary.LittleEndian.AppendUint64(key, a.GoPC)
			key = append(key, b2u8(rec.Root(i)))
		}
		c.key = key
		if chain, ok := c.chains[string(key)]; ok {
			g.Ancestors = chain
			return
		}
	}
	chain := make([]Ancestor, 0, len(rec.Anc))
	for i, a := range rec.Anc {
		anc := Ancestor{ID: a.Goid}
		anc.Start, anc.Wrapper, _ = p.start(a.StartPC)
		root := rec.Root(i)
		if !root {
			anc.CreatedBy = p.goSite(a.GoPC)
		}
		chain = append(chain, anc)
		if root {
			break
		}
	}
	g.Ancestors = chain[:len(chain):len(chain)]
	if c != nil {
		c.chains[string(key)] = g.Ancestors
	}
}

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// symbols caches what a Process symbolized: start and go statement sites,
// and the frames of walks. It is shared by a Process and its Stopped views,
// and safe for concurrent use.
type symbols struct {
	mu     sync.Mutex
	starts map[uint64]startSite
	gos    map[uint64]Site
	names  *stack.StartNamer
}

type startSite struct {
	fn, wrapper Site
	system      bool
}

// start symbolizes a start PC: the function the go statement names, the
// wrapper the goroutine starts in if any, and whether the runtime counts
// a goroutine that starts there as its own (runtime.isSystemGoroutine; a
// finalizer or cleanup goroutine is reconsidered with its stack).
func (p *Process) start(pc uint64) (fn, wrapper Site, system bool) {
	if pc == 0 {
		return Site{}, Site{}, false
	}
	sy := p.sym
	sy.mu.Lock()
	defer sy.mu.Unlock()
	if s, ok := sy.starts[pc]; ok {
		return s.fn, s.wrapper, s.system
	}
	var s startSite
	if f := p.exe.Bin.FindFunc(pc - p.exe.Bias); f == nil {
		s.fn = Site{PC: pc}
	} else {
		sn := sy.names.Name(pc)
		s.fn = Site{Function: sn.Fn.Func, File: sn.Fn.File, Line: sn.Fn.Line}
		if sn.Entry != 0 {
			s.fn.PC = sn.Entry + p.exe.Bias
		}
		if sn.Wrapper != nil {
			s.wrapper = Site{PC: pc, Function: sn.Wrapper.Func, File: sn.Wrapper.File, Line: sn.Wrapper.Line}
		}
		s.system = systemStart(gobin.PrintName(f.Name))
	}
	sy.starts[pc] = s
	return s.fn, s.wrapper, s.system
}

// goSite symbolizes a go statement's PC.
func (p *Process) goSite(pc uint64) Site {
	if pc == 0 {
		return Site{}
	}
	sy := p.sym
	sy.mu.Lock()
	defer sy.mu.Unlock()
	if s, ok := sy.gos[pc]; ok {
		return s
	}
	l := stack.CreatedBy(p.exe.Bin, p.exe.Bias, stack.Ancestor{GoPC: pc})
	s := Site{PC: pc, Function: l.Func, File: l.File, Line: l.Line}
	sy.gos[pc] = s
	return s
}

// Frame is one logical frame of a stack.
type Frame struct {
	PC       uint64 // the physical frame's PC (a return address but for the innermost)
	Function string // "" outside Go code
	File     string
	Line     int
	Inlined  bool   // inlined into the next frame out
	Offset   uint64 // PC minus the function's entry (physical frames only)
	// Signal: a signal arrived during this frame (a kernel signal frame
	// gave its PC); the frames from here on ran before it.
	Signal bool
	// Wrapper: a compiler-generated wrapper (a go statement's, a method
	// value's or an interface method's).
	Wrapper bool
	// Hidden: the program's own goroutine dump (runtime.Stack,
	// runtime/pprof's goroutine profile at debug=2, a crash at the
	// default GOTRACEBACK) does not print this frame. The frames of a
	// stack with Hidden false are exactly the frames that dump prints,
	// in its order: it hides the runtime's unexported functions and
	// wrappers (runtime.gopanic and a wrapper a panic called excepted),
	// and shows every frame of a stack it would hide whole.
	Hidden bool
}

// ErrRunning is returned by Stack for a goroutine running on a thread of
// a live process: its stack is the thread's, which only a stop could read.
var ErrRunning = errors.New("the goroutine is running: its stack is its thread's registers, which a live read does not stop")

// StackEndError is a stack walk that ended before the stack's root:
// Reason says why (an unreadable or implausible frame, a depth bound).
// The frames up to there are kept.
type StackEndError struct{ Reason string }

// Error says why the walk ended.
func (e *StackEndError) Error() string { return "stack walk ended early: " + e.Reason }

// Stack walks g's stack by frame pointers from where it resumes (for a
// core or a Stopped, from its thread's registers if it was running) and symbolizes it,
// innermost first, inlined calls expanded. ctx is checked once. A
// goroutine of GoroutineStacks has its stack already: Stack returns it.
func (p *Process) Stack(ctx context.Context, g *Goroutine) ([]Frame, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if g.walk != nil || g.Stack != nil {
		return g.Stack, nil
	}
	regs, ok := g.regs, g.hasRegs
	exact := false
	if !ok && g.Thread != 0 {
		for _, th := range p.threads { // a core's or a stopped process's
			if th.TID == g.Thread {
				regs, ok, exact = th.Regs, true, true
			}
		}
	}
	if !ok {
		if g.State == StateRunning {
			return nil, ErrRunning
		}
		return nil, fmt.Errorf("goroutine %d (%s) has no saved registers", g.ID, g.State)
	}
	return p.frames(regs, exact), nil
}

// frames walks a stack from regs and symbolizes it: exact registers are a
// thread's (its PC is where it is), saved ones a parked goroutine's (its
// PC is where it resumes).
func (p *Process) frames(regs target.Regs, exact bool) []Frame {
	w := stack.Unwind(p.mem, p.exe.Bin, p.exe.Bias, regs)
	if exact {
		return toFrames(stack.SymbolizeWalk(p.exe.Bin, p.exe.Bias, w))
	}
	return toFrames(stack.SymbolizeResumed(p.exe.Bin, p.exe.Bias, w))
}

func toFrames(locs []stack.Loc) []Frame {
	out := make([]Frame, 0, len(locs))
	hidden := stack.DumpHidden(locs)
	for i, l := range locs {
		out = append(out, Frame{PC: l.PC, Function: l.Func, File: l.File, Line: l.Line, Inlined: l.Inlined, Offset: l.Offset, Signal: l.Signal, Wrapper: l.Wrapper, Hidden: hidden[i]})
	}
	return out
}
