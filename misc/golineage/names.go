package main

import "fpsafe.dev/misc/internal/stack"

// A goroutine is named by the function its go statement names
// (stack.StartNamer).

// frameJSON is one frame as the JSON output prints it.
type frameJSON = stack.FuncLine

// startName is what a start PC names.
type startName = stack.StartName

// startName is the goroutine set's name for a start PC, nil for none.
func (s *goroutineSet) startName(pc uint64) *startName {
	if pc == 0 {
		return nil
	}
	if s.names == nil {
		s.names = stack.NewStartNamer(s.snap.bin, s.snap.bias)
	}
	return s.names.Name(pc)
}

// nameStarts names every start PC of the set, its goroutines' and their
// ancestors': the names read the executable's code, which the snapshot
// may close before the set is printed.
func (s *goroutineSet) nameStarts() {
	for i := range s.gs {
		if r := s.gs[i].Record; r != nil {
			s.startName(r.StartPC)
			for _, a := range r.Anc {
				s.startName(a.StartPC)
			}
		}
	}
}

// nameFromStacks names the goroutines whose start the executable's code
// leaves unresolved (a go statement's wrapper that calls a function value)
// from their stacks (stack.StartNamer.FromStack).
func (s *goroutineSet) nameFromStacks() {
	if s.snap == nil || s.snap.bin == nil {
		return
	}
	for i := range s.gs {
		g := &s.gs[i]
		if g.Record == nil || len(g.Frames) == 0 {
			continue
		}
		if sn := s.startName(g.Record.StartPC); sn != nil && sn.Unresolved {
			g.named = s.names.FromStack(g.Record.StartPC, g.Frames)
		}
	}
}

// goroutineStart is what g's start names: its own stack's answer if its
// start PC's code leaves it open, else its start PC's.
func (s *goroutineSet) goroutineStart(g *goroutine) *startName {
	if g.named != nil {
		return g.named
	}
	if g.Record == nil {
		return nil
	}
	return s.startName(g.Record.StartPC)
}

// startFunc is the goroutine's function: the one its go statement names.
func (s *goroutineSet) startFunc(g *goroutine) string {
	sn := s.goroutineStart(g)
	if sn == nil {
		return "?"
	}
	return sn.Fn.Func
}

// ancestorFunc is startFunc for a start PC (an ancestor entry's).
func (s *goroutineSet) ancestorFunc(pc uint64) string {
	sn := s.startName(pc)
	if sn == nil {
		return "?"
	}
	return sn.Fn.Func
}
