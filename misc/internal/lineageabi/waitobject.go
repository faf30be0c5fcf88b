package lineageabi

import (
	"strings"

	"fpsafe.dev/misc/internal/target"
)

// SavedRegs gives the registers a goroutine that is not running resumes
// with: its syscall state in a syscall, else its sched.
func SavedRegs(g *Goroutine) (target.Regs, bool) {
	switch g.Status {
	case StatusSyscall:
		return target.Regs{PC: g.SyscallPC, SP: g.SyscallSP, FP: g.SyscallBP}, g.SyscallPC != 0
	case StatusRunning, StatusCopystack:
		return target.Regs{}, false // its stack is a thread's, or moving
	}
	return target.Regs{PC: g.SchedPC, SP: g.SchedSP, FP: g.SchedBP}, g.SchedPC != 0
}

// SemaObject is what a goroutine blocked on wait address addr, with wait
// reason reason, waits for: a sync.Cond's notify list ("cond"), the
// sync.Mutex, RWMutex or WaitGroup whose semaphore it sleeps on, or another
// semaphore ("sema", the runtime's own).
//
// A semaphore's address lies inside its lock, at an offset fixed by the
// sync package's layout (go1.27: internal/sync.Mutex{state int32; sema
// uint32}; RWMutex{w Mutex; writerSem, readerSem uint32; ...};
// WaitGroup{state atomic.Uint64; sema uint32}), and the wait reason says
// which semaphore it is, so every goroutine blocked on one lock names the
// lock itself: an RWMutex's blocked readers (readerSem), its writer
// waiting for them (writerSem) and a writer queued behind another (w's
// sema, "sync.Mutex.Lock", at the RWMutex's own address) alike.
func SemaObject(reason string, addr uint64) (kind string, obj uint64) {
	if strings.HasPrefix(reason, "sync.Cond") {
		return "cond", addr
	}
	if l, ok := syncLocks[reason]; ok && addr >= l.off {
		return l.kind, addr - l.off
	}
	return "sema", addr
}

// syncLocks maps the wait reason of a goroutine asleep on a sync type's
// semaphore to the type and the semaphore's offset in it.
var syncLocks = map[string]struct {
	kind string
	off  uint64
}{
	"sync.Mutex.Lock":     {"mutex", 4},
	"sync.RWMutex.Lock":   {"rwmutex", 8},
	"sync.RWMutex.RLock":  {"rwmutex", 12},
	"sync.WaitGroup.Wait": {"waitgroup", 8},
}
