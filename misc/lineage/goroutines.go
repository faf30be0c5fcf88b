package lineage

import (
	"context"
	"errors"
	"fmt"

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
	Start     Site // the function it runs
	CreatedBy Site // the go statement that created it
}

// WaitObject is what a blocked goroutine waits on.
type WaitObject struct {
	// Kind is "chan" (a channel operation), "select", "mutex",
	// "rwmutex", "waitgroup", "cond" or "sema" (another semaphore), ""
	// if the goroutine waits on nothing the ABI publishes.
	Kind  string
	Addr  uint64   // the lock, notify list or semaphore (not for chan, select)
	Chans []uint64 // the channels of a channel operation or select
}

// Label is one pprof label (runtime/pprof.Do, SetGoroutineLabels).
type Label struct{ Key, Value string }

// Goroutine is one goroutine.
type Goroutine struct {
	ID, Parent uint64 // Parent 0: the runtime's own, or goroutine 1
	// State is "idle", "runnable", "running", "syscall", "waiting",
	// "copystack", "preempted" or "leaked".
	State      string
	WaitReason string // for "waiting": "chan receive", "sync.Mutex.Lock", ...
	Wait       WaitObject
	Labels     []Label
	Start      Site       // the function the goroutine runs (its go statement's callee)
	CreatedBy  Site       // the go statement that created it; zero for the runtime's own
	Ancestors  []Ancestor // its parent first; Truncated if there were more
	Truncated  bool

	regs    target.Regs // where it resumes (not running)
	hasRegs bool
	onTID   int // thread running it, if known
}

// Snapshot is what one read of every goroutine found.
type Snapshot struct {
	Goroutines []*Goroutine
	// Torn counts goroutines left out because their records kept changing
	// while read (a live process only).
	Torn int
}

// Goroutines reads every goroutine that is not dead. In a live process the
// read is not one instant: each goroutine is consistent in itself.
func (p *Process) Goroutines(ctx context.Context) (*Snapshot, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	gs, torn, err := v.Goroutines()
	if err != nil {
		return nil, err
	}
	onThread := map[uint64]int{}
	for _, tid := range v.Threads() {
		if rec, err := v.Thread(tid); err == nil && rec != nil {
			onThread[rec.Goid] = int(tid)
		}
	}
	s := &Snapshot{Torn: torn, Goroutines: make([]*Goroutine, 0, len(gs))}
	for i := range gs {
		g := p.goroutine(&gs[i])
		g.onTID = onThread[g.ID]
		s.Goroutines = append(s.Goroutines, g)
	}
	return s, nil
}

// goroutine converts the reader's goroutine.
func (p *Process) goroutine(lg *lineageabi.Goroutine) *Goroutine {
	g := p.fromRecord(lg.Record)
	g.State = lineageabi.StatusName(lg.Status)
	if lg.Status == lineageabi.StatusWaiting {
		g.WaitReason = lg.WaitReason
	}
	for _, l := range lg.Labels {
		g.Labels = append(g.Labels, Label(l))
	}
	switch {
	case len(lg.WaitChans) > 0 && lg.Select:
		g.Wait = WaitObject{Kind: "select", Chans: lg.WaitChans}
	case len(lg.WaitChans) > 0:
		g.Wait = WaitObject{Kind: "chan", Chans: lg.WaitChans}
	case lg.WaitAddr != 0:
		kind, addr := lineageabi.SemaObject(lg.WaitReason, lg.WaitAddr)
		g.Wait = WaitObject{Kind: kind, Addr: addr}
	}
	g.regs, g.hasRegs = lineageabi.SavedRegs(lg)
	return g
}

// fromRecord is the lineage part of a goroutine, from its record.
func (p *Process) fromRecord(rec *lineageabi.Record) *Goroutine {
	g := &Goroutine{ID: rec.Goid, Parent: rec.ParentGoid, Truncated: rec.Truncated()}
	g.Start = p.site(rec.StartPC, false)
	if len(lineageabi.Chain(rec)) > 0 {
		g.CreatedBy = p.site(rec.GoPC, true)
	}
	for i, a := range rec.Anc {
		anc := Ancestor{ID: a.Goid, Start: p.site(a.StartPC, false)}
		root := rec.Root(i)
		if !root {
			anc.CreatedBy = p.site(a.GoPC, true)
		}
		g.Ancestors = append(g.Ancestors, anc)
		if root {
			break
		}
	}
	return g
}

// site symbolizes a start PC (gopc false) as the function the go
// statement names (looking through the compiler's wrappers: "go f(x)"
// starts in a wrapper that calls f), or a go statement's PC.
func (p *Process) site(pc uint64, gopc bool) Site {
	if pc == 0 {
		return Site{}
	}
	key := pc<<1 | b2u(gopc)
	if s, ok := p.sites[key]; ok {
		return s
	}
	var s Site
	if gopc {
		l := stack.CreatedBy(p.exe.Bin, p.exe.Bias, stack.Ancestor{GoPC: pc})
		s = Site{PC: pc, Function: l.Func, File: l.File, Line: l.Line}
	} else if p.exe.Bin.FindFunc(pc-p.exe.Bias) != nil {
		fn := p.names.Name(pc).Fn
		s = Site{PC: pc, Function: fn.Func, File: fn.File, Line: fn.Line}
	} else {
		s = Site{PC: pc}
	}
	p.sites[key] = s
	return s
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
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
}

// ErrRunning is returned by Stack for a goroutine running on a thread of
// a live process: its stack is the thread's, which only a stop could read.
var ErrRunning = errors.New("the goroutine is running: its stack is its thread's registers, which a live read does not stop")

// Stack walks g's stack by frame pointers from where it resumes (for a
// core or a Stopped, from its thread's registers if it was running) and symbolizes it,
// innermost first, inlined calls expanded. ctx is checked once.
func (p *Process) Stack(ctx context.Context, g *Goroutine) ([]Frame, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	regs, ok := g.regs, g.hasRegs
	exact := false
	if !ok && g.onTID != 0 {
		for _, th := range p.threads { // a core's or a stopped process's
			if th.TID == g.onTID {
				regs, ok, exact = th.Regs, true, true
			}
		}
	}
	if !ok {
		if g.State == "running" {
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
	for _, l := range locs {
		out = append(out, Frame{PC: l.PC, Function: l.Func, File: l.File, Line: l.Line, Inlined: l.Inlined, Offset: l.Offset, Signal: l.Signal})
	}
	return out
}
