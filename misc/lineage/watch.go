package lineage

import (
	"context"
	"errors"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// Reading a running process's goroutines again and again (Watcher).
//
// A profiler that counts parked goroutines tick after tick (a wall-clock
// profile) would read every goroutine and walk every stack at each tick
// with GoroutineStacks. Most of them have not run since the last tick: the
// runtime counts, in each goroutine's lineage record, the times it started
// running (doc/lineage-abi.md, "changes"), so a goroutine read parked
// whose count has not moved still has the stack it had. A Watcher keeps
// each goroutine's last reading and reads again only those whose count
// moved, and those read in a state that can change without it (running,
// runnable, in a system call): a tick over a population that stayed
// parked costs one vectored read of the counts.

// A Watcher reads the goroutines of a running process again and again,
// with their stacks, and tells what changed since its last read (Changes).
// It is not safe for concurrent use; several Watchers of one Process may
// run at once.
type Watcher struct {
	p     *Process
	cache lineageabi.Cache[*Goroutine]
	// The stack walkers of the readers, kept from read to read: a walk
	// equal to one seen before is the same *stack.Walk, whose frames are
	// symbolized once (frames), not at every read that finds it again (a
	// goroutine in a system call, read again at every read).
	walkers []*parkedWalker
	frames  map[*stack.Walk][]Frame
}

// watchMaxWalks bounds the walks (and symbolized stacks) a Watcher
// remembers; past it, it forgets them all and starts again.
const watchMaxWalks = 1 << 16

// errWatchNotLive is Watch's error for a core or a stopped process.
var errWatchNotLive = errors.New("lineage: Watch reads a running process; a core or a stopped process does not change")

// Watch returns a Watcher of the goroutines of p, a running process (not a
// core).
func (p *Process) Watch() (*Watcher, error) {
	if err := p.usable(nil); err != nil {
		return nil, err
	}
	if p.pid == 0 || p.threads != nil {
		return nil, errWatchNotLive
	}
	return &Watcher{p: p}, nil
}

// Changes reads the process's goroutines and returns those that changed
// since the previous call: gone are goroutines the previous calls returned
// (the same pointers) that ran, ended, or kept changing while read since;
// added are goroutines read this time, new or read again, each with its
// stack as GoroutineStacks gives it, in ID order. The first call returns
// every goroutine in added. A goroutine that ran since is in both: its old
// reading in gone, its new one in added. The set the calls describe (every
// added not gone since) is what GoroutineStacks would return but for
// goroutines that keep changing (left out until read consistently).
//
// A goroutine read parked (waiting) stays in the set, unchanged, until it
// runs: one woken meanwhile keeps its parked reading (its state and
// stack) until it runs. A goroutine read in any other state is read again,
// and so gone and added again, at every call. Its Thread is the thread
// running it at the read that added it.
//
// The returned slices are reused by the next call; the goroutines are not.
func (w *Watcher) Changes(ctx context.Context) (gone, added []*Goroutine, err error) {
	gone, added, err = w.changes(ctx)
	return gone, added, w.p.publicError(err)
}

func (w *Watcher) changes(ctx context.Context) (gone, added []*Goroutine, err error) {
	p := w.p
	v, err := p.view(ctx)
	if err != nil {
		return nil, nil, err
	}
	stack.Table(p.exe.Bin)
	kept := len(w.frames)
	for _, pw := range w.walkers {
		kept += len(pw.walks)
	}
	if kept > watchMaxWalks {
		w.walkers, w.frames = nil, nil
	}
	if w.frames == nil {
		w.frames = map[*stack.Walk][]Frame{}
	}
	next := 0
	gone, added, _, err = w.cache.Changes(v, func() lineageabi.Visit[*Goroutine] {
		// Called for each reader of the read, one at a time.
		if next == len(w.walkers) {
			w.walkers = append(w.walkers, &parkedWalker{p: p})
		}
		pw := w.walkers[next]
		next++
		return func(gs []*lineageabi.Goroutine) []*Goroutine {
			// Each reader converts its batch: the batch's goroutines
			// are reused by its next one.
			walks := pw.walk(gs)
			c := p.newConverter(len(gs))
			for i, lg := range gs {
				c.add(lg, walks[i], true)
			}
			return c.out
		}
	})
	// The cache lets a visit give no result for a goroutine (nil); this
	// one always gives one, but the slices are cleaned all the same.
	added = compactNil(added)
	gone = compactNil(gone)
	sortByID(added)
	var onThread map[uint64]int
	for _, g := range added {
		if g.State != StateWaiting {
			if onThread == nil {
				onThread = p.onThreads(v) // the threads' regions, read once
			}
			g.Thread = onThread[g.ID]
		}
		p.fillStack(g, w.frames)
	}
	return gone, added, err
}

func compactNil(gs []*Goroutine) []*Goroutine {
	out := gs[:0]
	for _, g := range gs {
		if g != nil {
			out = append(out, g)
		}
	}
	clear(gs[len(out):])
	return out
}
