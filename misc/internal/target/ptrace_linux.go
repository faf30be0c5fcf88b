package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Tracer owns one locked OS thread: Linux requires every ptrace request for
// a tracee to come from the thread that attached it.
type Tracer struct {
	req chan func()
	ctx context.Context
}

func NewTracer() *Tracer { return NewTracerContext(context.Background()) }

// NewTracerContext returns a Tracer whose stops end, with ctx's error and
// every thread detached, once ctx is done: the loops that seize threads
// and wait for them to stop poll it.
func NewTracerContext(ctx context.Context) *Tracer {
	t := &Tracer{req: make(chan func()), ctx: ctx}
	ready := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		// Short sleeps while waiting for threads to stop must be short: the
		// default 50µs timer slack would be added to every stop.
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		ready <- true
		for f := range t.req {
			f()
		}
	}()
	<-ready
	return t
}

func (t *Tracer) do(f func()) {
	done := make(chan bool)
	t.req <- func() { f(); done <- true }
	<-done
}

// Close ends the tracer thread.
func (t *Tracer) Close() { close(t.req) }

// Stopped is a process whose threads are held in ptrace-stop.
type Stopped struct {
	PID     int
	Threads []Thread
	Mem     Mem
	// Since is when the last thread entered ptrace-stop: from then until
	// the detach every thread is stopped (before it, some may still run).
	Since   time.Time
	t       *Tracer         // unused after Stop returns
	ctx     context.Context // ends the stop: the Tracer's, or the call's
	seized  []int
	pending map[int]int // signal to re-inject on detach
	start   time.Time
	states  bool
	relist  bool
	only    []int // stop just these threads (nil: all)
}

// PermissionError explains what is needed to trace a process.
type PermissionError struct {
	PID int
	Err error
}

func (e *PermissionError) Error() string {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.PID)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "TracerPid:" && f[1] != "0" {
				return fmt.Sprintf("cannot attach to process %d: it is already traced by process %s (a debugger?); only one tracer at a time", e.PID, f[1])
			}
		}
	}
	msg := fmt.Sprintf("cannot attach to process %d: %v: tracing another process needs root or CAP_SYS_PTRACE, or the same user", e.PID, e.Err)
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch strings.TrimSpace(string(b)) {
		case "1":
			msg += " with kernel.yama.ptrace_scope=0 (it is 1: only descendants may be traced)"
		case "2":
			msg += "; kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may trace"
		case "3":
			msg += "; kernel.yama.ptrace_scope is 3: ptrace is disabled until reboot"
		}
	}
	return msg + "; a process being debugged by another tracer cannot be attached either"
}

func (e *PermissionError) Unwrap() error { return e.Err }

// TracedError reports a process that another tracer (a debugger) holds:
// only one tracer at a time may attach, so a reader refuses it up front,
// whether or not it would stop a thread.
type TracedError struct {
	PID, Tracer int
}

func (e *TracedError) Error() string {
	name := ""
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", e.Tracer)); err == nil {
		name = " (" + strings.TrimSpace(string(b)) + ")"
	}
	return fmt.Sprintf("process %d is already traced by process %d%s; only one tracer at a time: detach it (quit the debugger) and try again", e.PID, e.Tracer, name)
}

// CheckTracer returns a *TracedError if a thread of pid has a tracer
// (TracerPid in /proc/PID/task/TID/status) other than this process.
func CheckTracer(pid int) error {
	tids, err := ListThreads(pid)
	if err != nil {
		return err
	}
	for _, tid := range tids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			continue // exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 || f[0] != "TracerPid:" {
				continue
			}
			if t, _ := strconv.Atoi(f[1]); t != 0 && t != os.Getpid() {
				return &TracedError{PID: pid, Tracer: t}
			}
			break
		}
	}
	return nil
}

// ListThreads returns the thread ids of pid.
func ListThreads(pid int) ([]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("process %d: no such process", pid)
		}
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, ErrGone)
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if t, err := strconv.Atoi(n); err == nil {
			tids = append(tids, t)
		}
	}
	sort.Ints(tids)
	return tids, nil
}

func threadState(pid, tid int) string {
	return statState(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
}

// ProcState is the scheduling state letter of process pid ("R", "S", "Z", ...), "" if unknown.
func ProcState(pid int) string {
	return statState(fmt.Sprintf("/proc/%d/stat", pid))
}

// IsKernelThread reports whether pid is a kernel thread (PF_KTHREAD in the
// flags of /proc/PID/stat): it has no executable, as a process that is
// exiting has none once its memory is gone.
func IsKernelThread(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return false
	}
	// After the command: state, ppid, pgrp, session, tty_nr, tpgid, flags.
	f := strings.Fields(s[i+1:])
	if len(f) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&0x00200000 != 0
}

// statState is the state letter of a /proc stat file: the field after the
// command name, which ends at the line's last ')'.
func statState(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// stopTimeout bounds the wait for one thread to enter ptrace-stop (a thread
// in uninterruptible sleep stops only when it wakes).
const stopTimeout = 2 * time.Second

// cancelGrace bounds the wait for interrupted threads to stop once the
// Tracer's context is done (they are detached then).
const cancelGrace = 20 * time.Millisecond

// Stop seizes and interrupts every thread of pid, reads their registers,
// calls fn while they are all stopped, and detaches, all on the tracer
// thread: handing off to another goroutine while the target is stopped would
// add the tool's own scheduling latency to the target's stop time. If states
// is set, each thread's scheduling state is read first (costs a file read
// per thread) and the thread list is re-read until no thread is missing; a
// sampler leaves states unset and takes one listing. The threads are resumed
// even if fn panics. It returns how
// long the first thread stayed stopped (from its seizure to the last detach).
func (t *Tracer) Stop(pid int, states bool, fn func(*Stopped)) (stopped time.Duration, err error) {
	t.do(func() { stopped, err = t.stopOnThread(t.ctx, pid, nil, states, fn) })
	return stopped, err
}

// Do runs f on the tracer thread (so that f can call the OnThread methods):
// a sampling loop that runs there pays no goroutine handoff per stop.
func (t *Tracer) Do(f func()) { t.do(f) }

// HoldOnThread stops every thread of pid as Stop does, with ctx in place
// of the Tracer's context, and returns with them held: the caller, on the
// tracer thread (in Do), reads them and calls Release there. The threads
// are detached if the stop fails.
func (t *Tracer) HoldOnThread(ctx context.Context, pid int, states bool) (*Stopped, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("invalid pid %d", pid)
	}
	s := newStopped(t, ctx, pid, nil, states)
	if err := s.stopLocked(); err != nil {
		s.detachLocked()
		return nil, err
	}
	return s, nil
}

// Release detaches the threads HoldOnThread held (on the tracer thread)
// and returns how long the first one stayed stopped.
func (s *Stopped) Release() time.Duration {
	s.detachLocked()
	return time.Since(s.start)
}

// StopThreadOnThread stops only thread tid of pid (on the tracer thread),
// with ctx in place of the Tracer's context. That is enough for a
// consistent view of the thread's own stack and lineage (the ABI's
// stopped-thread argument is per thread), and the other threads run on
// meanwhile. It returns ErrThreadGone if tid exited.
func (t *Tracer) StopThreadOnThread(ctx context.Context, pid, tid int, states bool, fn func(*Stopped)) (time.Duration, error) {
	return t.stopOnThread(ctx, pid, []int{tid}, states, fn)
}

// StopThreadContext is StopThreadOnThread run on the tracer thread, from
// any goroutine.
func (t *Tracer) StopThreadContext(ctx context.Context, pid, tid int, states bool, fn func(*Stopped)) (d time.Duration, err error) {
	t.do(func() { d, err = t.stopOnThread(ctx, pid, []int{tid}, states, fn) })
	return d, err
}

var errThreadGone = errors.New("thread exited")

// ErrStopTimeout is wrapped by the error of a stop whose thread did not
// enter ptrace-stop in time (stopTimeout): one in uninterruptible sleep,
// or not scheduled on a loaded machine. Nothing is left stopped.
var ErrStopTimeout = errors.New("did not stop")

// ErrThreadGone is returned by StopThreadOnThread for a vanished thread.
var ErrThreadGone = errThreadGone

func (t *Tracer) stopOnThread(ctx context.Context, pid int, only []int, states bool, fn func(*Stopped)) (stopped time.Duration, err error) {
	if pid <= 0 {
		return 0, fmt.Errorf("invalid pid %d", pid)
	}
	s := newStopped(t, ctx, pid, only, states)
	defer func() {
		s.detachLocked()
		if !s.start.IsZero() {
			stopped = time.Since(s.start)
		}
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error while %d was stopped: %v", pid, r)
		}
	}()
	if err = s.stopLocked(); err == nil {
		fn(s)
	}
	return stopped, err
}

func newStopped(t *Tracer, ctx context.Context, pid int, only []int, states bool) *Stopped {
	return &Stopped{PID: pid, t: t, ctx: ctx, pending: map[int]int{}, Mem: &procMem{pid: pid}, states: states, relist: states && only == nil, only: only}
}

func (s *Stopped) stopLocked() error {
	seen := map[int]bool{}
	states := map[int]string{}
	for round := 0; ; round++ {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("stopping process %d: %w", s.PID, err)
		}
		tids := s.only
		if tids == nil {
			var err error
			if tids, err = ListThreads(s.PID); err != nil {
				return err
			}
		}
		// Seize first (the threads keep running), then interrupt them all in
		// a tight loop, so that the stop window is as short as it can be.
		var batch []int
		for _, tid := range tids {
			if seen[tid] {
				continue
			}
			seen[tid] = true
			if s.states {
				states[tid] = threadState(s.PID, tid) // before the stop changes it
			}
			if err := unix.PtraceSeize(tid); err != nil {
				if err == unix.ESRCH {
					continue // the thread exited
				}
				if err == unix.EPERM {
					// A zombie or exiting thread also refuses to be seized.
					if st := threadState(s.PID, tid); st == "" || st == "Z" || st == "X" {
						if ps := ProcState(s.PID); ps == "" || ps == "Z" || ps == "X" {
							return fmt.Errorf("process %d: %w", s.PID, ErrGone)
						}
						continue
					}
					return &PermissionError{PID: s.PID, Err: err}
				}
				return fmt.Errorf("ptrace(SEIZE, %d): %v", tid, err)
			}
			s.seized = append(s.seized, tid)
			batch = append(batch, tid)
		}
		if s.start.IsZero() && len(batch) > 0 {
			s.start = time.Now()
		}
		for _, tid := range batch {
			if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
				return fmt.Errorf("ptrace(INTERRUPT, %d): %v", tid, err)
			}
		}
		// Threads created meanwhile are caught by listing again (stopped
		// threads create no threads, so the list settles). A sampler may
		// skip this: a thread missed for one sample does not matter there.
		if len(batch) == 0 || !s.relist || round > 100 {
			break
		}
	}
	if len(s.seized) == 0 {
		if s.only != nil && ProcState(s.PID) != "" {
			return errThreadGone
		}
		return fmt.Errorf("process %d: no such process (it exited)", s.PID)
	}
	live, err := s.waitAll()
	if err != nil {
		return err
	}
	s.Since = time.Now()
	s.seized = live
	if len(live) == 0 {
		if s.only != nil && ProcState(s.PID) != "" {
			return errThreadGone
		}
		return fmt.Errorf("process %d: %w while being attached", s.PID, ErrGone)
	}
	for _, tid := range live {
		r, err := getRegs(tid)
		if err != nil {
			if err == unix.ESRCH {
				continue
			}
			return fmt.Errorf("reading registers of thread %d: %v", tid, err)
		}
		s.Threads = append(s.Threads, Thread{TID: tid, Regs: r, State: states[tid]})
	}
	return nil
}

// waitAll waits until every seized thread is in a ptrace-stop and returns
// those that are (the others exited). It polls wait4 for any tracee, so the
// threads are collected in whatever order they stop, and sleeps on this OS
// thread between polls (a Go timer, or sched_yield, would cost the target
// more: its threads are stopped meanwhile, and on a busy machine every
// context switch of ours is CPU taken from it).
func (s *Stopped) waitAll() ([]int, error) {
	want := map[int]bool{}
	for _, tid := range s.seized {
		want[tid] = true
	}
	var live []int
	deadline := time.Now().Add(stopTimeout)
	canceled := false
	nap := 5 * time.Microsecond
	for len(want) > 0 {
		if s.ctx.Err() != nil && !canceled {
			// The interrupted threads stop within microseconds, and only
			// a thread in ptrace-stop can be detached: wait a little
			// longer for them, not the full timeout.
			canceled = true
			if grace := time.Now().Add(cancelGrace); grace.Before(deadline) {
				deadline = grace
			}
		}
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, unix.WALL|unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			return live, nil // the rest exited
		case err != nil:
			return nil, fmt.Errorf("wait for threads of %d: %v", s.PID, err)
		case wpid > 0:
			if !want[wpid] {
				continue
			}
			switch {
			case ws.Exited() || ws.Signaled():
				delete(want, wpid)
			case ws.Stopped():
				if ws.TrapCause() != unix.PTRACE_EVENT_STOP {
					// Signal-delivery-stop: hand the signal back on detach.
					s.pending[wpid] = int(ws.StopSignal())
				}
				delete(want, wpid)
				live = append(live, wpid)
			}
			continue
		}
		if time.Now().After(deadline) {
			if canceled {
				break
			}
			for tid := range want {
				return nil, fmt.Errorf("thread %d of process %d %w within %v (state %q)", tid, s.PID, ErrStopTimeout, stopTimeout, threadState(s.PID, tid))
			}
		}
		// Back off: most threads stop within microseconds, but one that
		// must first be scheduled can take a time slice.
		ts := unix.NsecToTimespec(nap.Nanoseconds())
		unix.Nanosleep(&ts, nil)
		nap = min(2*nap, 500*time.Microsecond)
	}
	if canceled {
		return nil, fmt.Errorf("stopping process %d: %w", s.PID, s.ctx.Err())
	}
	sort.Ints(live)
	return live, nil
}

func (s *Stopped) detachLocked() {
	for _, tid := range s.seized {
		sig := s.pending[tid]
		_, _, _ = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
	}
	s.seized = nil
}

// procMem reads a live process's memory with process_vm_readv.
type procMem struct {
	pid int
}

// iovecs is ReadV's scratch, reused from call to call.
type iovecs struct {
	local  []unix.Iovec
	remote []unix.RemoteIovec
	idx    []int
}

var iovecPool = sync.Pool{New: func() any { return new(iovecs) }}

func (m *procMem) ReadAt(p []byte, addr uint64) error {
	if len(p) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	if err == unix.ESRCH {
		return &FaultError{addr, len(p), ErrGone}
	}
	if err != nil {
		return &FaultError{addr, len(p), err}
	}
	if n != len(p) {
		return &FaultError{addr, len(p), fmt.Errorf("short read (%d bytes)", n)}
	}
	return nil
}

// ProcMem returns a reader of pid's memory (valid whether or not it is stopped).
func ProcMem(pid int) Mem { return &procMem{pid: pid} }

// iovMax is the kernel's bound on the iovecs of one process_vm_readv.
const iovMax = 1024

// ReadV reads bufs[i] at addrs[i], up to 1024 ranges per system call, and
// sets errs[i]. The kernel copies the ranges in order and stops at the
// first one it cannot read; that one is read again alone for its error,
// and the next call starts after it.
func (m *procMem) ReadV(bufs [][]byte, addrs []uint64, errs []error) {
	sc := iovecPool.Get().(*iovecs)
	local, remote, idx := sc.local, sc.remote, sc.idx
	defer func() {
		clear(local[:cap(local)]) // keep no buffer alive
		sc.local, sc.remote, sc.idx = local[:0], remote[:0], idx[:0]
		iovecPool.Put(sc)
	}()
	for i := 0; i < len(bufs); {
		local, remote, idx = local[:0], remote[:0], idx[:0]
		j := i
		for ; j < len(bufs) && len(local) < iovMax; j++ {
			errs[j] = nil
			if len(bufs[j]) == 0 {
				continue
			}
			v := unix.Iovec{Base: &bufs[j][0]}
			v.SetLen(len(bufs[j]))
			local = append(local, v)
			remote = append(remote, unix.RemoteIovec{Base: uintptr(addrs[j]), Len: len(bufs[j])})
			idx = append(idx, j)
		}
		if len(idx) == 0 {
			i = j
			continue
		}
		n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
		if err != nil {
			n = 0
		}
		k := 0
		for ; k < len(idx) && n >= len(bufs[idx[k]]); k++ {
			n -= len(bufs[idx[k]])
		}
		if k == len(idx) {
			i = j
			continue
		}
		f := idx[k]
		errs[f] = m.ReadAt(bufs[f], addrs[f])
		i = f + 1
	}
}
