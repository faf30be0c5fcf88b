package main

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// Filters (-goid, -state, -func) choose the goroutines the goroutine
// commands print. They are applied once, to the goroutineSet, before any
// output is written: ps, tree, waits and stacks -all print the set as
// they would print a target that had only those goroutines (tree keeps a
// chosen goroutine's ancestors, for context).

// A filter chooses goroutines; the zero filter chooses every one.
type filter struct {
	goids map[uint64]bool // -goid, nil: any
	state string          // -state, "": any
	fn    *regexp.Regexp  // -func, nil: any
}

// add defines the filter's flags on fl.
func (f *filter) add(fl *flag.FlagSet) {
	fl.Func("goid", "only goroutine `N` (repeatable, or a comma-separated list)", func(s string) error {
		if f.goids == nil {
			f.goids = map[uint64]bool{}
		}
		for _, w := range strings.Split(s, ",") {
			id, err := strconv.ParseUint(strings.TrimSpace(w), 10, 64)
			if err != nil || id == 0 {
				return fmt.Errorf("%q is not a goroutine id", w)
			}
			f.goids[id] = true
		}
		return nil
	})
	fl.Func("state", "only goroutines in state `S`: running, runnable, waiting, syscall, or a wait reason (\"chan receive\", \"sync.Mutex.Lock\")", func(s string) error {
		f.state = s
		return nil
	})
	fl.Func("func", "only goroutines whose start function, or a frame of whose stack, matches `REGEXP`", func(s string) error {
		re, err := regexp.Compile(s)
		if err != nil {
			return err
		}
		f.fn = re
		return nil
	})
}

func (f *filter) active() bool { return f.goids != nil || f.state != "" || f.fn != nil }

// match reports whether the filter chooses g of set s.
func (f *filter) match(s *goroutineSet, g *goroutine) bool {
	if f.goids != nil && !f.goids[g.Goid] {
		return false
	}
	if f.state != "" && !matchState(g, f.state) {
		return false
	}
	if f.fn != nil && !f.fn.MatchString(s.startFunc(g)) && !matchFrames(f.fn, g.Frames) {
		return false
	}
	return true
}

// matchState reports whether g is in state: the schema's state of ps
// -json (running, runnable, waiting, syscall) or its wait reason.
func matchState(g *goroutine, state string) bool {
	return g.jsonState() == state || g.Status == lineageabi.StatusWaiting && g.WaitReason == state
}

func matchFrames(re *regexp.Regexp, frames []stack.Loc) bool {
	for _, l := range frames {
		if re.MatchString(stack.FuncName(l)) {
			return true
		}
	}
	return false
}

// apply keeps the goroutines of s that f chooses; with ancestors, also
// the live ancestors of each chosen one (tree prints them as context).
func (f *filter) apply(s *goroutineSet, ancestors bool) {
	if !f.active() {
		return
	}
	keep := map[uint64]bool{}
	byGoid := map[uint64]*goroutine{}
	for i := range s.gs {
		byGoid[s.gs[i].Goid] = &s.gs[i]
	}
	for i := range s.gs {
		g := &s.gs[i]
		if !f.match(s, g) {
			continue
		}
		keep[g.Goid] = true
		// The creators still running, by their parent goids (the
		// records keep no goid of older ancestors).
		for r := g.Record; ancestors && r != nil && r.ParentGoid != 0 && !keep[r.ParentGoid]; {
			keep[r.ParentGoid] = true
			p := byGoid[r.ParentGoid]
			r = nil
			if p != nil {
				r = p.Record
			}
		}
	}
	out := s.gs[:0]
	for _, g := range s.gs {
		if keep[g.Goid] {
			out = append(out, g)
		}
	}
	s.gs = out
}

// threads keeps the threads that run a goroutine f chooses (all of them
// if f chooses every goroutine).
func (f *filter) threads(s *goroutineSet, threads []stack.Thread) []stack.Thread {
	if !f.active() {
		return threads
	}
	chosen := map[uint64]bool{}
	for _, g := range s.gs {
		chosen[g.Goid] = true
	}
	var out []stack.Thread
	for _, t := range threads {
		if t.Goid != 0 && chosen[t.Goid] {
			out = append(out, t)
		}
	}
	return out
}
