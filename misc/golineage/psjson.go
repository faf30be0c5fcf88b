package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// ps -json: one JSON object per goroutine and line, in the schema of
// misc/golineage/README.md ("ps -json"). Stacks (-stacks) hold the frames
// the program's own goroutine dump (runtime.Stack, pprof debug=2) prints.

// ancestorJSON is one of a goroutine's creators, parent first.
type ancestorJSON struct {
	// Goid is the parent's; ABI version 2 keeps no goid of older
	// ancestors.
	Goid  *uint64    `json:"goid,omitempty"`
	Start *frameJSON `json:"start,omitempty"`
	// StartWrapper is the compiler's wrapper the goroutine started in,
	// when Start is the function it calls.
	StartWrapper *frameJSON `json:"start_wrapper,omitempty"`
	CreatedBy    *frameJSON `json:"created_by,omitempty"`
}

// goroutineJSON is one goroutine of ps -json.
type goroutineJSON struct {
	Goid      uint64         `json:"goid"`
	Parent    uint64         `json:"parent"`
	Ancestors []ancestorJSON `json:"ancestors"`
	// AncestorsTruncated says the runtime dropped older ancestors
	// (GODEBUG=lineage=N keeps N).
	AncestorsTruncated bool       `json:"ancestors_truncated,omitempty"`
	Start              *frameJSON `json:"start,omitempty"`
	StartWrapper       *frameJSON `json:"start_wrapper,omitempty"`
	CreatedBy          *frameJSON `json:"created_by,omitempty"`
	State              string     `json:"state"`
	WaitReason         string     `json:"wait_reason,omitempty"`
	WaitSince          string     `json:"wait_since,omitempty"`
	WaitObject         string     `json:"wait_object,omitempty"`
	WaitKind           string     `json:"wait_kind,omitempty"`
	WaitChans          []string   `json:"wait_chans,omitempty"`
	Thread             int        `json:"thread,omitempty"`
	// Labels are the goroutine's pprof labels (runtime/pprof.Do).
	Labels   map[string]string `json:"labels,omitempty"`
	Stack    json.RawMessage   `json:"stack,omitempty"` // []frameJSON, encoded once per distinct stack
	StackEnd string            `json:"stack_end,omitempty"`
	// Corrupt names the fields whose values in a damaged core were
	// impossible: they are left out (or 0) instead of printed as fact.
	Corrupt []string `json:"corrupt,omitempty"`
}

// jsonState maps the runtime's status to the five states of the schema.
// A goroutine on a thread is running unless it is in a system call (a
// stack being copied, or the instant around a status change).
func (g *goroutine) jsonState() string {
	if g.TID != 0 && g.Status != lineageabi.StatusSyscall {
		return "running"
	}
	switch g.Status {
	case lineageabi.StatusRunning:
		return "running"
	case lineageabi.StatusRunnable, lineageabi.StatusPreempted:
		return "runnable"
	case lineageabi.StatusSyscall:
		return "syscall"
	case lineageabi.StatusWaiting, lineageabi.StatusCopystack, lineageabi.StatusLeaked:
		return "waiting"
	case lineageabi.StatusDead, lineageabi.StatusIdle:
		return "dead"
	}
	return "unknown"
}

// jsonWait fills the wait fields: the object is one address, the same for
// every goroutine waiting on the same object; a select waits on the lowest
// of its channels' addresses and lists them all in wait_chans.
func (g *goroutine) jsonWait(j *goroutineJSON, now, nowMono int64) {
	if g.Status != lineageabi.StatusWaiting && g.Status != lineageabi.StatusLeaked {
		return
	}
	j.WaitReason = g.WaitReason
	if now != 0 && g.WaitSince > 0 && nowMono > g.WaitSince {
		j.WaitSince = time.Unix(0, now-(nowMono-g.WaitSince)).UTC().Format(time.RFC3339Nano)
	}
	switch {
	case len(g.WaitChans) > 1 || g.Select:
		chans := append([]uint64(nil), g.WaitChans...)
		sort.Slice(chans, func(i, k int) bool { return chans[i] < chans[k] })
		j.WaitKind = "select"
		for _, c := range chans {
			j.WaitChans = append(j.WaitChans, fmt.Sprintf("%#x", c))
		}
		if len(chans) > 0 {
			j.WaitObject = j.WaitChans[0]
		}
	case len(g.WaitChans) == 1:
		j.WaitKind, j.WaitObject = "chan", fmt.Sprintf("%#x", g.WaitChans[0])
	case g.WaitAddr != 0:
		kind, addr := g.waitAddrObject()
		j.WaitKind, j.WaitObject = kind, fmt.Sprintf("%#x", addr)
	}
}

// jsonMemo keeps what writeJSON prints of many goroutines alike: thousands
// of goroutines share a start function, a go statement, or a stack (the
// symbolizer gives goroutines parked at the same place the same frames).
type jsonMemo struct {
	creators map[uint64]*frameJSON
	stacks   map[framesKey]json.RawMessage
}

type framesKey struct {
	first *stack.Loc
	n     int
}

// start is the function at a start PC, and the wrapper it starts in if
// any (names.go).
func (s *goroutineSet) start(pc uint64) (fn, wrapper *frameJSON) { return startJSON(s.startName(pc)) }

// goroutineStartJSON is start for goroutine g (goroutineStart).
func (s *goroutineSet) goroutineStartJSON(g *goroutine) (fn, wrapper *frameJSON) {
	return startJSON(s.goroutineStart(g))
}

func startJSON(sn *startName) (fn, wrapper *frameJSON) {
	if sn == nil {
		return nil, nil
	}
	return &sn.Fn, sn.Wrapper
}

// createdBy is the go statement at gopc, nil for none.
func (s *goroutineSet) createdBy(gopc uint64) *frameJSON {
	if gopc == 0 {
		return nil
	}
	if f, ok := s.json.creators[gopc]; ok {
		return f
	}
	l := stack.CreatedBy(s.snap.bin, s.snap.bias, stack.Ancestor{GoPC: gopc})
	f := &frameJSON{Func: stack.FuncName(l), File: l.File, Line: l.Line}
	if s.json.creators == nil {
		s.json.creators = map[uint64]*frameJSON{}
	}
	s.json.creators[gopc] = f
	return f
}

// stackJSON is the encoded dumpFrames(frames), nil if it keeps none.
func (s *goroutineSet) stackJSON(frames []stack.Loc) (json.RawMessage, error) {
	if len(frames) == 0 {
		return nil, nil
	}
	k := framesKey{&frames[0], len(frames)}
	if b, ok := s.json.stacks[k]; ok {
		return b, nil
	}
	var b json.RawMessage
	if d := dumpFrames(frames); len(d) > 0 {
		var err error
		if b, err = json.Marshal(d); err != nil {
			return nil, err
		}
	}
	if s.json.stacks == nil {
		s.json.stacks = map[framesKey]json.RawMessage{}
	}
	s.json.stacks[k] = b
	return b, nil
}

// dumpFrames keeps the frames the runtime's own traceback prints at the
// default GOTRACEBACK level (stack.DumpHidden).
func dumpFrames(locs []stack.Loc) []frameJSON {
	var out []frameJSON
	for i, hidden := range stack.DumpHidden(locs) {
		if !hidden {
			out = append(out, frameJSON{Func: stack.FuncName(locs[i]), File: locs[i].File, Line: locs[i].Line})
		}
	}
	return out
}

// writeJSON prints one object per line, goroutines in goid order.
func (s *goroutineSet) writeJSON(w io.Writer, stacks bool) error {
	enc := json.NewEncoder(w)
	for i := range s.gs {
		g := &s.gs[i]
		j := goroutineJSON{Goid: g.Goid, Parent: g.Record.ParentGoid, Ancestors: []ancestorJSON{},
			AncestorsTruncated: g.Record.Truncated(), State: g.jsonState(), Thread: g.TID}
		j.Start, j.StartWrapper = s.goroutineStartJSON(g)
		for _, l := range g.Labels {
			if j.Labels == nil {
				j.Labels = map[string]string{}
			}
			j.Labels[l.Key] = l.Value
		}
		if lin := g.lineage(); len(lin) > 0 {
			j.CreatedBy = s.createdBy(lin[0].GoPC)
		}
		for i, a := range g.Record.Anc {
			var anc ancestorJSON
			if a.Goid != 0 {
				anc.Goid = &a.Goid
			}
			anc.Start, anc.StartWrapper = s.start(a.StartPC)
			if !g.Record.Root(i) { // the runtime prints no creator for goroutine 1
				anc.CreatedBy = s.createdBy(a.GoPC)
			}
			j.Ancestors = append(j.Ancestors, anc)
		}
		if g.Status == lineageabi.StatusUnknown {
			j.Corrupt = append(j.Corrupt, "state")
		}
		j.Corrupt = append(j.Corrupt, g.Record.Bad.Names()...)
		g.jsonWait(&j, s.wallNow, s.monoNow)
		if stacks {
			b, err := s.stackJSON(g.Frames)
			if err != nil {
				return err
			}
			j.Stack, j.StackEnd = b, g.Stop
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}
