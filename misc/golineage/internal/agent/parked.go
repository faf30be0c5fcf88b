package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/lineageraw"
	"fpsafe.dev/misc/lineage"
)

// The off-CPU side of the agent: every Config.Parked, the goroutines of
// each target that are not on a thread are read from its registry with
// no thread stopped (the SDK's Watcher, through process_vm_readv), and each
// one parked counts in that process's off-CPU profile for the time since
// the previous read. A goroutine that stayed parked and did not run since
// is not read again (the Watcher's change counts), so a read costs a look
// at every goroutine's record and work for those that changed only.
//
// The on-CPU profile has the goroutines that run; this one those that
// wait, with their wait reason as the state label, their pprof labels and
// their lineage: together they say where a service's goroutines spend
// their time.
//
// The reads run on a goroutine of their own (parkedReader.run), not on the
// loop that empties the ring buffer: the first read of a process walks
// every goroutine's stack, which takes long in a process of many
// goroutines, and the samples must not wait for it. The loop tells the
// reader which processes to read, and when an interval ends; the reader
// exports the off-CPU profiles itself, through the agent's export, which
// serializes the two.

// parkedReader reads the targets' parked goroutines.
type parkedReader struct {
	a       *Agent // its cfg, exes and export (safe from this goroutine)
	cmds    chan parkedCmd
	done    chan struct{}
	targets map[int]*parkedTarget // the reader's goroutine's own

	reads, slow, failed atomic.Uint64
}

// A parkedCmd is what the sampling loop asks of the reader: to start
// reading a target, to stop (its last profile exported), or to export every
// target's profile of the interval.
type parkedCmd struct {
	start *parkedTarget
	stop  int
	flush bool
}

// parkedTarget is a target's off-CPU state.
type parkedTarget struct {
	info *Process
	x    *exe // a reference of the reader's, released when it stops
	bias uint64

	lp      *lineage.Process // nil until the first read
	watch   *lineage.Watcher
	members map[*lineage.Goroutine]*parkedGroup // the parked goroutines as of the last read
	groups  map[string]*parkedGroup             // by sample key
	last    time.Time                           // when the last read was (zero: none counted)
	next    time.Time                           // when the next is due
	wait    time.Duration                       // the wait after a read that ran out of time
	b       *pprofout.Builder
	off     bool // the registry cannot be read: no more reads
}

// A parkedGroup is the goroutines parked with the same sample: the same
// stack, lineage, state and labels. A read costs the agent work for each
// group, not for each goroutine: a server's thousands of idle connections
// are one group.
type parkedGroup struct {
	s   *pprofout.Sample
	key string
	n   int64 // its goroutines
}

const (
	// parkedTimeout bounds one process's read. A read that runs out of
	// time counts for nothing, and the process's next one waits longer:
	// parkedBackoff periods, doubled each time up to parkedMaxWait, so
	// that a process too large to read in time costs a read now and then,
	// not one every period.
	parkedTimeout = 2 * time.Second
	parkedBackoff = 10
	parkedMaxWait = 5 * time.Minute
	// parkedCmds is how many requests may wait while a read runs.
	parkedCmds = 1024
)

func newParkedReader(a *Agent) *parkedReader {
	return &parkedReader{a: a, cmds: make(chan parkedCmd, parkedCmds), done: make(chan struct{}), targets: map[int]*parkedTarget{}}
}

// run reads until the command channel is closed, then exports every
// target's last profile and returns.
func (r *parkedReader) run(ctx context.Context) {
	defer close(r.done)
	// As on the sampling loop: a mapped executable truncated under a read
	// faults, and guard turns that into an error.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case c, ok := <-r.cmds:
			if !ok {
				r.flush(true)
				for pid := range r.targets {
					r.forget(pid)
				}
				return
			}
			switch {
			case c.start != nil:
				r.targets[c.start.info.PID] = c.start
			case c.stop != 0:
				if t := r.targets[c.stop]; t != nil {
					if out := r.export(nil, t, true); len(out) > 0 {
						r.a.export(out)
					}
					r.forget(c.stop)
				}
			case c.flush:
				r.flush(false)
			}
		case <-timer.C:
		}
		r.readDue(ctx)
		timer.Reset(r.untilNext())
	}
}

// untilNext is the time until the next read is due.
func (r *parkedReader) untilNext() time.Duration {
	d := r.a.cfg.Parked
	for _, t := range r.targets {
		if !t.off {
			d = min(d, time.Until(t.next))
		}
	}
	return max(d, time.Millisecond)
}

// readDue reads every target whose read is due.
func (r *parkedReader) readDue(ctx context.Context) {
	for _, t := range r.targets {
		now := time.Now()
		if t.off || now.Before(t.next) || ctx.Err() != nil {
			continue
		}
		t.next = t.next.Add(r.a.cfg.Parked)
		if t.next.Before(now) {
			t.next = now.Add(r.a.cfg.Parked)
		}
		if err := r.read(ctx, t, now); err != nil {
			t.off = true
			r.failed.Add(1)
			fmt.Fprintf(r.a.cfg.Log, "golineage agent: process %d (%s): reading its parked goroutines: %v; its off-CPU profile stops\n",
				t.info.PID, t.info.ServiceName, err)
		}
	}
}

// read reads t's parked goroutines once.
func (r *parkedReader) read(ctx context.Context, t *parkedTarget, now time.Time) error {
	if t.watch == nil {
		t.lp = lineageraw.OpenShared(t.info.PID, t.x.bin, t.bias, t.x.abi, true).(*lineage.Process)
		var err error
		if t.watch, err = t.lp.Watch(); err != nil {
			return err
		}
		t.members, t.groups = map[*lineage.Goroutine]*parkedGroup{}, map[string]*parkedGroup{}
		t.b = r.newBuilder(t)
	}
	rctx, cancel := context.WithTimeout(ctx, parkedTimeout)
	defer cancel()
	var gone, added []*lineage.Goroutine
	var err error
	if gerr := guard(func() { gone, added, err = t.watch.Changes(rctx) }); gerr != nil {
		return gerr
	}
	if err != nil {
		t.last = time.Time{} // this read counts for nothing
		switch {
		case errors.Is(err, lineage.ErrExited) || isGone(err) || ctx.Err() != nil:
			return nil // exiting (the exit event ends it), or the agent is
		case rctx.Err() != nil:
			t.wait = min(max(2*t.wait, parkedBackoff*r.a.cfg.Parked), parkedMaxWait)
			t.next = time.Now().Add(t.wait)
			r.slow.Add(1)
			return nil
		}
		return err
	}
	t.wait = 0
	for _, g := range gone {
		if grp := t.members[g]; grp != nil {
			delete(t.members, g)
			if grp.n--; grp.n == 0 {
				delete(t.groups, grp.key)
			}
		}
	}
	for _, g := range added {
		raw, walk := lineageraw.Goroutine(g)
		if raw == nil || walk == nil {
			continue // on a thread: the on-CPU profile has it
		}
		st := lineageabi.StatusName(raw.Status)
		if raw.WaitReason != "" {
			st = raw.WaitReason
		}
		// No goroutine IDs, the goroutine's or its ancestors': goroutines
		// parked at the same place, with the same creators, state and
		// labels, are one sample.
		chain := lineageabi.Chain(raw.Record)
		for i := range chain {
			chain[i].Goid, chain[i].ParentGoid = 0, 0
		}
		s := &pprofout.Sample{PCs: walk.PCs, Lineage: chain, State: st, Labels: raw.Labels}
		k := s.Key()
		grp := t.groups[k]
		if grp == nil {
			grp = &parkedGroup{s: s, key: k}
			t.groups[k] = grp
		}
		grp.n++
		t.members[g] = grp
	}
	// Each read counts every parked goroutine for the time since the last
	// one: a read that comes late covers more. The first read of a process
	// (or the first after one that counted for nothing) only starts the
	// count: what came before it is no time the agent watched, so a
	// goroutine parked all along is counted for the time since, no more.
	r.reads.Add(1)
	if !t.last.IsZero() {
		d := now.Sub(t.last)
		for _, grp := range t.groups {
			t.b.AddSharedN(grp.s, grp.n, d*time.Duration(grp.n))
		}
	}
	t.last = now
	return nil
}

func (r *parkedReader) newBuilder(t *parkedTarget) *pprofout.Builder {
	b := pprofout.New(t.x.bin, t.bias, r.a.cfg.Parked)
	b.OffCPU = true
	return b
}

// flush exports every target's profile of the interval.
func (r *parkedReader) flush(final bool) {
	var out []Profile
	for _, t := range r.targets {
		out = r.export(out, t, final)
	}
	if len(out) > 0 {
		r.a.export(out)
	}
}

// export appends t's profile of the interval to out, if it has one, and
// starts the next.
func (r *parkedReader) export(out []Profile, t *parkedTarget, final bool) []Profile {
	if t.b == nil || t.b.Len() == 0 {
		return out
	}
	b := t.b
	t.b = r.newBuilder(t) // the groups' samples join it at the next read
	var prof *profile.Profile
	if err := guard(func() { prof = b.Profile() }); err != nil {
		fmt.Fprintf(r.a.cfg.Log, "golineage agent: process %d: %v; its off-CPU profile is dropped\n", t.info.PID, err)
		return out
	}
	return append(out, Profile{Process: t.info, Profile: prof, Final: final, OffCPU: true})
}

// forget releases what the reader holds of target pid.
func (r *parkedReader) forget(pid int) {
	t := r.targets[pid]
	if t.lp != nil {
		t.lp.Close()
	}
	r.a.exes.release(t.x)
	delete(r.targets, pid)
}
