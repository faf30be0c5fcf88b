package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// waits: every waiting goroutine, grouped by what it waits for.
//
// A goroutine blocked on an object (a channel, the semaphore of a
// sync.Mutex, RWMutex or WaitGroup, a sync.Cond's notify list) is grouped
// with the others blocked on the same object; a select is listed under
// each of its channels. A goroutine that waits on no object (IO wait,
// sleep, timers, select with no cases, a nil channel) is grouped by its
// wait site: its wait reason and the innermost frame of the program's own
// code (waitSite). Objects that hold one goroutine each and share a wait
// site are grouped by that site too, with the objects listed: 300
// connections whose flush loops each wait on their own sync.Cond make one
// group of 300, not 300 groups of one. Groups are printed largest first.

// waitGroup is one group of waits.
type waitGroup struct {
	object  string       // "chan 0x..", "sema 0x..", "cond 0x.."; "" for a site group
	reason  string       // a site group's wait reason
	site    *stack.Loc   // a site group's wait site, nil if unknown
	objects []string     // a site group's objects, one goroutine each
	gs      []*goroutine // ascending goid
}

// waitObjects are the objects g waits on, as waits names them.
func (g *goroutine) waitObjects() []string {
	var objs []string
	for _, c := range g.WaitChans {
		objs = append(objs, fmt.Sprintf("chan %#x", c))
	}
	if g.WaitAddr != 0 {
		objs = append(objs, g.waitAddrName())
	}
	return objs
}

// waiting reports whether g is parked (or leaked) in a wait.
func (g *goroutine) waiting() bool {
	return g.Status == lineageabi.StatusWaiting || g.Status == lineageabi.StatusLeaked
}

// waitSite is where g waits: the innermost frame of the program's own
// code (package main, or a package outside the standard library), else
// the innermost frame outside the runtime and sync (userFrame), else (the
// runtime's own goroutines) the outermost frame below runtime.goexit.
func (g *goroutine) waitSite() (stack.Loc, bool) {
	for _, l := range g.Frames {
		if programFunc(l.Func) {
			return l, true
		}
	}
	if l, ok := g.userFrame(); ok {
		return l, true
	}
	for i := len(g.Frames) - 1; i >= 0; i-- {
		if l := g.Frames[i]; l.Func != "" && l.Func != "runtime.goexit" {
			return l, true
		}
	}
	return stack.Loc{}, false
}

// programFunc reports whether the function fn belongs to package main or
// to a package outside the standard library, whose import paths begin
// with a domain name.
func programFunc(fn string) bool {
	i := strings.LastIndex(fn, "/")
	pkg, _, ok := strings.Cut(fn[i+1:], ".")
	if !ok {
		return false
	}
	if i < 0 {
		return pkg == "main"
	}
	first, _, _ := strings.Cut(fn, "/")
	return strings.Contains(first, ".")
}

// siteKey identifies a wait site: the wait reason and the frame.
func siteKey(g *goroutine) string {
	l, ok := g.waitSite()
	if !ok {
		return g.WaitReason + "\x00?"
	}
	return fmt.Sprintf("%s\x00%s\x00%s:%d", g.WaitReason, l.Func, l.File, l.Line)
}

// waitGroups groups the waiting goroutines, largest group first, then by
// object or site.
func (s *goroutineSet) waitGroups() []*waitGroup {
	byObject := map[string]*waitGroup{}
	var objects []string
	bySite := map[string]*waitGroup{}
	var sites []string
	siteGroup := func(g *goroutine) *waitGroup {
		k := siteKey(g)
		sg := bySite[k]
		if sg == nil {
			sg = &waitGroup{reason: g.WaitReason}
			if l, ok := g.waitSite(); ok {
				sg.site = &l
			}
			bySite[k] = sg
			sites = append(sites, k)
		}
		return sg
	}
	for i := range s.gs {
		g := &s.gs[i]
		if !g.waiting() {
			continue
		}
		objs := g.waitObjects()
		if len(objs) == 0 {
			sg := siteGroup(g)
			sg.gs = append(sg.gs, g)
		}
		for _, o := range objs {
			og := byObject[o]
			if og == nil {
				og = &waitGroup{object: o}
				byObject[o] = og
				objects = append(objects, o)
			}
			og.gs = append(og.gs, g)
		}
	}
	// Objects of one goroutine each, at a site shared with another such
	// object, go to the site's group.
	alone := map[string][]string{} // site -> its objects of one goroutine
	for _, o := range objects {
		if og := byObject[o]; len(og.gs) == 1 {
			k := siteKey(og.gs[0])
			alone[k] = append(alone[k], o)
		}
	}
	var groups []*waitGroup
	for _, o := range objects {
		og := byObject[o]
		if len(og.gs) == 1 && len(alone[siteKey(og.gs[0])]) > 1 {
			sg := siteGroup(og.gs[0])
			sg.objects = append(sg.objects, o)
			sg.gs = append(sg.gs, og.gs[0]) // once, by dedupGoroutines below
			continue
		}
		groups = append(groups, og)
	}
	for _, k := range sites {
		groups = append(groups, bySite[k])
	}
	for _, wg := range groups {
		sort.Slice(wg.gs, func(i, j int) bool { return wg.gs[i].Goid < wg.gs[j].Goid })
		wg.gs = dedupGoroutines(wg.gs)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if a, b := len(groups[i].gs), len(groups[j].gs); a != b {
			return a > b
		}
		return groups[i].key() < groups[j].key()
	})
	return groups
}

// dedupGoroutines drops repeats from gs, sorted by goid.
func dedupGoroutines(gs []*goroutine) []*goroutine {
	out := gs[:0]
	for i, g := range gs {
		if i == 0 || gs[i-1].Goid != g.Goid {
			out = append(out, g)
		}
	}
	return out
}

// key orders groups of the same size: object groups by object, then site
// groups by site.
func (wg *waitGroup) key() string {
	if wg.object != "" {
		return "0" + wg.object
	}
	return "1" + wg.siteString()
}

// where prints a frame as waits does: "main.worker at main.go:28".
func where(l *stack.Loc) string {
	if l == nil {
		return "?"
	}
	return fmt.Sprintf("%s at %s:%d", stack.FuncName(*l), l.File, l.Line)
}

// siteString prints a site group's site: "[sleep] main.sleeper at main.go:52".
func (wg *waitGroup) siteString() string {
	return fmt.Sprintf("[%s] %s", wg.reason, where(wg.site))
}

// listedObjects is how many objects a site group's header lists.
const listedObjects = 3

// writeWaits prints the groups, each a header and its goroutines, those
// that share state, wait site and function on one line, largest first:
//
//	chan 0xc000104060: 4 goroutines
//		x3 [chan receive] main.chain at main.go:70 (goroutines 8, 9, 12)
//		goroutine 10 [select] main.selector at main.go:46
//	[sync.Cond.Wait] main.flushLoop at main.go:58: 300 goroutines, one per object (cond 0xc0001, cond 0xc0002, cond 0xc0003, ...)
//		x300 [sync.Cond.Wait] main.flushLoop at main.go:58 (goroutines 20, 22, 24, ...)
//
// A goroutine whose function (the one its go statement names) is not
// that of its wait site is followed by it: "... at client.go:812 in
// main.readLoop".
func (s *goroutineSet) writeWaits(w io.Writer) {
	for _, wg := range s.waitGroups() {
		plural := "s"
		if len(wg.gs) == 1 {
			plural = ""
		}
		if wg.object != "" {
			fmt.Fprintf(w, "%s: %d goroutine%s\n", wg.object, len(wg.gs), plural)
		} else {
			fmt.Fprintf(w, "%s: %d goroutine%s", wg.siteString(), len(wg.gs), plural)
			if len(wg.objects) > 0 {
				objs := wg.objects
				more := ""
				if len(objs) > listedObjects {
					objs, more = objs[:listedObjects], ", ..."
				}
				fmt.Fprintf(w, ", one per object (%s%s)", strings.Join(objs, ", "), more)
			}
			fmt.Fprintln(w)
		}
		// Goroutines alike, in the order of their first.
		type line struct {
			text  string
			goids []uint64
		}
		var lines []*line
		byText := map[string]*line{}
		for _, g := range wg.gs {
			var site *stack.Loc
			if l, ok := g.waitSite(); ok {
				site = &l
			}
			text := fmt.Sprintf("[%s] %s", g.state(), where(site))
			if fn := s.startFunc(g); site == nil || fn != stack.FuncName(*site) {
				text += " in " + fn
			}
			l := byText[text]
			if l == nil {
				l = &line{text: text}
				byText[text] = l
				lines = append(lines, l)
			}
			l.goids = append(l.goids, g.Goid)
		}
		sort.SliceStable(lines, func(i, j int) bool { return len(lines[i].goids) > len(lines[j].goids) })
		for _, l := range lines {
			if len(l.goids) == 1 {
				fmt.Fprintf(w, "\tgoroutine %d %s\n", l.goids[0], l.text)
			} else {
				fmt.Fprintf(w, "\tx%d %s (goroutines %s)\n", len(l.goids), l.text, goidList(l.goids))
			}
		}
	}
}

// waitGroupJSON is one group of waits -json.
type waitGroupJSON struct {
	Count      int              `json:"count"`
	Object     string           `json:"object,omitempty"`
	ObjectKind string           `json:"object_kind,omitempty"`
	WaitReason string           `json:"wait_reason,omitempty"`
	Site       *frameJSON       `json:"site,omitempty"`
	Objects    []waitObjectJSON `json:"objects,omitempty"`
	Goroutines []waiterJSON     `json:"goroutines"`
}

// waitObjectJSON is an object a goroutine waits on.
type waitObjectJSON struct {
	Object string `json:"object"`
	Kind   string `json:"kind"`
}

// waiterJSON is one goroutine of a group.
type waiterJSON struct {
	Goid         uint64     `json:"goid"`
	Start        *frameJSON `json:"start,omitempty"`
	StartWrapper *frameJSON `json:"start_wrapper,omitempty"`
	WaitReason   string     `json:"wait_reason"`
	WaitSince    string     `json:"wait_since,omitempty"`
	Where        *frameJSON `json:"where,omitempty"`
}

// objectJSON splits "chan 0x.." into its address and kind.
func objectJSON(o string) waitObjectJSON {
	kind, addr, _ := strings.Cut(o, " ")
	return waitObjectJSON{Object: addr, Kind: kind}
}

// locJSON is l as a frame, nil for none.
func locJSON(l *stack.Loc) *frameJSON {
	if l == nil {
		return nil
	}
	return &frameJSON{Func: stack.FuncName(*l), File: l.File, Line: l.Line}
}

// writeWaitsJSON prints one JSON object per group and line, largest
// group first.
func (s *goroutineSet) writeWaitsJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, wg := range s.waitGroups() {
		j := waitGroupJSON{Count: len(wg.gs), Goroutines: []waiterJSON{}}
		if wg.object != "" {
			o := objectJSON(wg.object)
			j.Object, j.ObjectKind = o.Object, o.Kind
		} else {
			j.WaitReason, j.Site = wg.reason, locJSON(wg.site)
			for _, o := range wg.objects {
				j.Objects = append(j.Objects, objectJSON(o))
			}
		}
		for _, g := range wg.gs {
			wj := waiterJSON{Goid: g.Goid, WaitReason: g.WaitReason}
			wj.Start, wj.StartWrapper = s.goroutineStartJSON(g)
			var pj goroutineJSON
			g.jsonWait(&pj, s.wallNow, s.monoNow)
			wj.WaitSince = pj.WaitSince
			if l, ok := g.waitSite(); ok {
				wj.Where = locJSON(&l)
			}
			j.Goroutines = append(j.Goroutines, wj)
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}
