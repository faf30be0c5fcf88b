package lineage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// Registers are the registers a stack walk starts from. LR is arm64's
// link register (0 on amd64); TLS is the thread pointer (FS base on amd64,
// TPIDR_EL0 on arm64).
type Registers struct {
	PC, SP, FP, LR, TLS uint64
}

// Thread is one thread of a stopped process or a core.
type Thread struct {
	TID int
	// State is the kernel's scheduling state letter ("R", "S", "D", ...)
	// just before the stop (from the core's notes for a core), "" if
	// unknown.
	State     string
	Registers Registers
}

// ErrResumed is returned by a read of a Stopped that was resumed (by
// Resume, or because the context given to Stop was done).
var ErrResumed = errors.New("the process was resumed: a stopped read is valid only while it is held")

// Stopped is a live process whose threads are all held in ptrace-stop:
// nothing in it moves, so every read of it is one instant, the threads'
// registers are known, and running goroutines have stacks. Memory read
// while held is cached (pages are read once).
//
// Resume detaches every thread, and must be called; the threads are also
// detached as soon as the context given to Stop is done (except those of
// a Stop within OnTracerThread, which its Resume detaches). After that,
// reads return ErrResumed. A Stopped's methods may be called from one
// goroutine at a time (Resume from any, but from OnTracerThread's fn for
// a Stop within it).
type Stopped struct {
	p       *Process // the held view: its mem is cached and guarded
	threads []Thread
	since   time.Time
	held    atomic.Bool
	release chan struct{} // closed to detach
	once    sync.Once
	done    chan struct{} // closed once every thread is detached
	err     error         // of the stop or the detach, set before done closes
	window  time.Duration
	direct  *target.Stopped // the hold of a Stop in OnTracerThread, which Resume releases
}

// hold makes s the held view of p while st holds it.
func (s *Stopped) hold(p *Process, st *target.Stopped) {
	s.since = st.Since
	s.threads = threads(st.Threads)
	held := *p
	held.mem = &heldMem{m: target.NewCachedMem(st.Mem), held: &s.held}
	held.threads = st.Threads
	held.core = nil
	held.tr, held.onTr = nil, false
	s.p = &held
	s.held.Store(true)
}

func threads(ts []target.Thread) []Thread {
	out := make([]Thread, 0, len(ts))
	for _, th := range ts {
		out = append(out, Thread{TID: th.TID, State: th.State, Registers: Registers(th.Regs)})
	}
	return out
}

// ErrThreadExited is returned by StopThread for a thread that exited
// before it stopped.
var ErrThreadExited = target.ErrThreadGone

// ErrStopTimeout is matched by the error of Stop or StopThread when a
// thread did not stop within 2 seconds (in uninterruptible sleep, or not
// scheduled on a loaded machine). Nothing is left stopped: a sampler may
// skip that thread this time.
var ErrStopTimeout = target.ErrStopTimeout

// StopThread holds thread tid of the live process, only that thread,
// while fn runs, and detaches it: the other threads run on. It is the
// cheap stop of a sampler or of a live read of threads: while tid is held
// its registers, its stack and its region's record are consistent (a
// thread's region changes only on that thread); other memory is live.
// fn runs on the tracer thread the Process keeps (so nothing waits for a
// goroutine to be scheduled while the thread is stopped) and must not
// call Stop or StopThread. The Stopped is valid during fn only; its
// Resume does nothing. StopThread returns how long the thread was held,
// from its seizure to its detach, and ErrThreadExited if it exited first.
func (p *Process) StopThread(ctx context.Context, tid int, fn func(*Stopped)) (time.Duration, error) {
	tr, err := p.tracer("StopThread")
	if err != nil {
		return 0, err
	}
	f := func(st *target.Stopped) {
		s := &Stopped{}
		s.hold(p, st)
		defer s.held.Store(false)
		fn(s)
	}
	var d time.Duration
	if p.onTr {
		d, err = tr.StopThreadOnThread(ctx, p.pid, tid, !p.opts.FastStops, f)
	} else {
		d, err = tr.StopThreadContext(ctx, p.pid, tid, !p.opts.FastStops, f)
	}
	return d, p.publicError(err)
}

// tracer is the tracer thread the Process keeps, started (once the
// process is found to have no other tracer) by its first use.
func (p *Process) tracer(what string) (*target.Tracer, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if p.pid == 0 {
		return nil, fmt.Errorf("lineage: %s needs a live process", what)
	}
	if p.tr == nil {
		if err := target.CheckTracer(p.pid); err != nil {
			return nil, err
		}
		stack.Table(p.exe.Bin) // decoded before a stop, not while it holds a thread
		p.tr = target.NewTracer()
	}
	return p.tr, nil
}

// OnTracerThread runs fn on the OS thread the Process keeps for its
// ptrace stops (ptrace takes every request for a thread from the thread
// that attached it), and the StopThread and Stop calls fn makes run there
// directly. Outside fn, each of those calls hands its stop to that thread
// and waits for it (two thread wake-ups); a sampler that stops threads
// tick after tick runs its loop in OnTracerThread and pays none. Within
// fn, a Stopped that Stop returns is detached by its Resume only, which
// fn must call before it returns (not when Stop's context is done: only
// this thread may detach it), and Stop does not look for another tracer
// again (OnTracerThread did). fn must call the Process's methods from its
// own goroutine. OnTracerThread returns once fn has, or an error (a core,
// a process that another tracer holds) without running fn.
func (p *Process) OnTracerThread(fn func()) error {
	if p.onTr {
		fn()
		return nil
	}
	tr, err := p.tracer("OnTracerThread")
	if err != nil {
		return err
	}
	tr.Do(func() {
		p.onTr = true
		defer func() { p.onTr = false }()
		fn()
	})
	return nil
}

// Since is when the last thread held entered ptrace-stop: from then until
// the detach nothing held moves.
func (s *Stopped) Since() time.Time { return s.since }

// Stop stops every thread of the live process with ptrace (seize and
// interrupt, the permission OpenPID needs) and holds them until Resume.
// It refuses a process that another tracer (a debugger) holds. The threads
// are detached, with any signal that arrived meanwhile re-delivered, on
// Resume, when ctx is done (within OnTracerThread, at Resume only), and
// if Stop itself fails: nothing is left stopped. A thread in
// uninterruptible sleep that does not stop within a few seconds fails the
// stop. Options.FastStops makes it cheaper.
func (p *Process) Stop(ctx context.Context) (*Stopped, error) {
	if p.pid == 0 {
		return nil, errors.New("lineage: Stop needs a live process (a core is already stopped)")
	}
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if p.onTr {
		st, err := p.tr.HoldOnThread(ctx, p.pid, !p.opts.FastStops)
		if err != nil {
			return nil, p.publicError(err)
		}
		s := &Stopped{direct: st, done: make(chan struct{})}
		s.hold(p, st)
		return s, nil
	}
	if err := target.CheckTracer(p.pid); err != nil {
		return nil, p.publicError(err)
	}
	stack.Table(p.exe.Bin) // decoded before the stop, not while it holds the target
	s := &Stopped{release: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan bool, 1)
	tr := target.NewTracerContext(ctx)
	go func() {
		defer close(s.done)
		defer tr.Close()
		s.window, s.err = tr.Stop(p.pid, !p.opts.FastStops, func(st *target.Stopped) {
			s.hold(p, st)
			ready <- true
			select {
			case <-s.release:
			case <-ctx.Done():
			}
			s.held.Store(false)
		})
		ready <- false
	}()
	if !<-ready {
		<-s.done
		if s.err == nil {
			s.err = errors.New("lineage: the stop ended before it held the process")
		}
		return nil, p.publicError(s.err)
	}
	return s, nil
}

// Resume detaches every thread and waits until they all run again. It
// returns the stop's error if the detach found one (a thread that exited
// while held is not an error). It may be called more than once.
func (s *Stopped) Resume() error {
	if s.direct != nil { // Stop's in OnTracerThread: on this thread
		s.once.Do(func() {
			s.held.Store(false)
			s.window = s.direct.Release()
			close(s.done)
		})
		return nil
	}
	if s.release == nil { // StopThread's
		return nil
	}
	s.once.Do(func() { close(s.release) })
	<-s.done
	return s.err
}

// Held is how long the process was held: after Resume, from the first
// thread's seizure to the last detach; while held, since the last thread
// stopped.
func (s *Stopped) Held() time.Duration {
	select {
	case <-s.done:
		return s.window
	default:
		return time.Since(s.since)
	}
}

// Threads are the process's threads with their registers at the stop, by
// thread id.
func (s *Stopped) Threads() []Thread { return s.threads }

// Goroutines reads every goroutine that is not dead, at the instant of the
// stop (Snapshot.Torn counts records caught mid-write, which a stopped
// read does not retry).
func (s *Stopped) Goroutines(ctx context.Context) (*Snapshot, error) {
	if !s.held.Load() {
		return nil, ErrResumed
	}
	return s.p.Goroutines(ctx)
}

// GoroutineStacks is Process.GoroutineStacks at the instant of the stop:
// a running goroutine's stack is walked from its thread's registers.
func (s *Stopped) GoroutineStacks(ctx context.Context) (*Snapshot, error) {
	if !s.held.Load() {
		return nil, ErrResumed
	}
	return s.p.GoroutineStacks(ctx)
}

// Regions reads every thread's current goroutine, by thread id.
func (s *Stopped) Regions(ctx context.Context) ([]Region, error) {
	if !s.held.Load() {
		return nil, ErrResumed
	}
	return s.p.Regions(ctx)
}

// Stack is Process.Stack for a goroutine of s.Goroutines: a running
// goroutine's stack is walked from its thread's registers.
func (s *Stopped) Stack(ctx context.Context, g *Goroutine) ([]Frame, error) {
	if !s.held.Load() {
		return nil, ErrResumed
	}
	return s.p.Stack(ctx, g)
}

// ThreadStack walks thread tid's stack by frame pointers from its
// registers (the thread's own stack: the system stack, cgo, a signal
// handler or a goroutine's) and symbolizes it, innermost first.
func (s *Stopped) ThreadStack(ctx context.Context, tid int) ([]Frame, error) {
	if !s.held.Load() {
		return nil, ErrResumed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, th := range s.p.threads {
		if th.TID == tid {
			return s.p.frames(th.Regs, true), nil
		}
	}
	return nil, fmt.Errorf("process %d has no thread %d", s.p.pid, tid)
}

// ReadAt reads the held process's memory (through a page cache: a page is
// read once while held). It fails with ErrResumed once resumed.
func (s *Stopped) ReadAt(b []byte, addr uint64) error { return s.p.mem.ReadAt(b, addr) }

// heldMem reads a held process's memory while it is held.
type heldMem struct {
	m    target.Mem
	held *atomic.Bool
}

func (h *heldMem) ReadAt(b []byte, addr uint64) error {
	if !h.held.Load() {
		return &target.FaultError{Addr: addr, Len: len(b), Err: ErrResumed}
	}
	return h.m.ReadAt(b, addr)
}
