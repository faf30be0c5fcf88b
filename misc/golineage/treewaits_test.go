package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/golden"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// TestGoldenTreeJSON keeps the fixture's part of tree -json: the nodes
// that are, or lead to, goroutines running its code, goids blanked (goid 1
// kept), in the tree's own order. The state of a node kept only for its
// descendants (runtime.main, reading standard input) is blanked too.
func TestGoldenTreeJSON(t *testing.T) {
	out := parkedOutput(t, "tree", "-json")
	var prune func(n *treeJSON) bool
	prune = func(n *treeJSON) bool {
		kids := []*treeJSON{}
		for _, k := range n.Children {
			if prune(k) {
				kids = append(kids, k)
			}
		}
		n.Children = kids
		for i, id := range n.Goids {
			if id != 1 {
				n.Goids[i] = 0
			}
		}
		if n.Start != nil && strings.HasPrefix(n.Start.Func, "main.") {
			return true
		}
		n.State, n.WaitReason = "", ""
		return len(kids) > 0
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var n treeJSON
		if err := json.Unmarshal([]byte(l), &n); err != nil {
			t.Fatalf("tree -json: %v in line %q", err, l)
		}
		if prune(&n) {
			b, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			keep = append(keep, normalize(string(b)))
		}
	}
	golden.Check(t, "tree.json", strings.Join(keep, "\n")+"\n")
}

// TestGoldenWaitsJSON keeps the groups of waits -json that hold the
// fixture's goroutines, goids blanked and addresses normalized, sorted.
func TestGoldenWaitsJSON(t *testing.T) {
	out := parkedOutput(t, "waits", "-json")
	var keep []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var g waitGroupJSON
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("waits -json: %v in line %q", err, l)
		}
		if !strings.Contains(l, `"main.`) {
			continue
		}
		for i := range g.Goroutines {
			g.Goroutines[i].Goid = 0
		}
		slices.SortFunc(g.Goroutines, func(a, b waiterJSON) int {
			x, _ := json.Marshal(a)
			y, _ := json.Marshal(b)
			return strings.Compare(string(x), string(y))
		})
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, normalize(string(b)))
	}
	slices.Sort(keep)
	golden.Check(t, "waits.json", strings.Join(keep, "\n")+"\n")
}

// TestWaitGroups checks the grouping rules of waits on a made-up set:
// every waiting goroutine is listed; goroutines on one object share its
// group, a select is listed under each of its channels; objects of one
// goroutine each at a shared site make one group of that site, listing
// them, but an object alone at its site keeps its own group; goroutines
// on no object are grouped by site; largest groups first.
func TestWaitGroups(t *testing.T) {
	at := func(fn string, line int) []stack.Loc {
		return []stack.Loc{
			{Func: "runtime.gopark", File: "proc.go", Line: 1},
			{Func: "sync.(*Cond).Wait", File: "cond.go", Line: 2},
			{Func: "time.Sleep", File: "time.go", Line: 3},
			{Func: fn, File: "main.go", Line: line},
		}
	}
	waiting := func(goid uint64, reason string, frames []stack.Loc) goroutine {
		return goroutine{Goroutine: &lineageabi.Goroutine{Goid: goid, Status: lineageabi.StatusWaiting,
			WaitReason: reason, Record: &lineageabi.Record{}}, Frames: frames}
	}
	var gs []goroutine
	for i := range uint64(4) { // 4 flush loops, each on its own cond
		g := waiting(10+i, "sync.Cond.Wait", at("main.flush", 7))
		g.WaitAddr = 0x1000 + 8*i
		gs = append(gs, g)
	}
	alone := waiting(20, "sync.Cond.Wait", at("main.other", 9)) // its own cond, its own site
	alone.WaitAddr = 0x2000
	gs = append(gs, alone)
	for i := range uint64(3) { // 3 sleepers, no object
		gs = append(gs, waiting(30+i, "sleep", at("main.nap", 5)))
	}
	for i := range uint64(2) { // 2 selects on a shared channel and each its own timer
		g := waiting(40+i, "select", at("main.poll", 3))
		g.WaitChans, g.Select = []uint64{0x3000, 0x4000 + 8*i}, true
		gs = append(gs, g)
	}
	for i := range uint64(3) { // 3 receivers on the shared channel
		g := waiting(60+i, "chan receive", at("main.recv", 11))
		g.WaitChans = []uint64{0x3000}
		gs = append(gs, g)
	}
	running := waiting(50, "", nil)
	running.Status = lineageabi.StatusRunnable
	gs = append(gs, running)

	s := &goroutineSet{gs: gs}
	var b strings.Builder
	s.writeWaits(&b)
	want := `chan 0x3000: 5 goroutines
	x3 [chan receive] main.recv at main.go:11 in ? (goroutines 60, 61, 62)
	x2 [select] main.poll at main.go:3 in ? (goroutines 40, 41)
[sync.Cond.Wait] main.flush at main.go:7: 4 goroutines, one per object (cond 0x1000, cond 0x1008, cond 0x1010, ...)
	x4 [sync.Cond.Wait] main.flush at main.go:7 in ? (goroutines 10, 11, 12, ...)
[sleep] main.nap at main.go:5: 3 goroutines
	x3 [sleep] main.nap at main.go:5 in ? (goroutines 30, 31, 32)
[select] main.poll at main.go:3: 2 goroutines, one per object (chan 0x4000, chan 0x4008)
	x2 [select] main.poll at main.go:3 in ? (goroutines 40, 41)
cond 0x2000: 1 goroutine
	goroutine 20 [sync.Cond.Wait] main.other at main.go:9 in ?
`
	if b.String() != want {
		t.Errorf("waits:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := s.writeWaitsJSON(&b); err != nil {
		t.Fatal(err)
	}
	var groups []waitGroupJSON
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		var g waitGroupJSON
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("waits -json: %v in line %q", err, l)
		}
		groups = append(groups, g)
	}
	if len(groups) != 5 || groups[0].Count != 5 || groups[0].Object != "0x3000" || groups[0].ObjectKind != "chan" ||
		groups[1].Site == nil || groups[1].Site.Func != "main.flush" || len(groups[1].Objects) != 4 ||
		groups[1].Objects[3] != (waitObjectJSON{Object: "0x1018", Kind: "cond"}) || len(groups[1].Goroutines) != 4 {
		t.Errorf("waits -json:\n%s", b.String())
	}
}

// TestTreeGroups checks tree's collapsing on a made-up set: siblings of
// one shape make one line that lists their goids, its children are those
// of all of them, and a sibling of another shape (fewer children) or an
// exited creator keeps its own line. An ancestor beyond a parent has no
// goid (ABI version 2): the depth-0 one is goroutine 1 (the only live
// goroutine at depth 0 with its sites), an exited one is shown without one.
func TestTreeGroups(t *testing.T) {
	site := func(goid uint64) lineageabi.Anc { return lineageabi.Anc{GoPC: 0x2000 + goid} } // no start: no binary to name it
	g := func(goid uint64, reason string, anc ...uint64) goroutine {
		s := site(goid)
		r := &lineageabi.Record{Goid: goid, StartPC: s.StartPC, GoPC: s.GoPC, Depth: uint32(len(anc))}
		for i, a := range anc {
			e := site(a)
			if i == 0 {
				r.ParentGoid, e.Goid = a, a
			}
			r.Anc = append(r.Anc, e)
		}
		return goroutine{Goroutine: &lineageabi.Goroutine{Goid: goid, Status: lineageabi.StatusWaiting,
			WaitReason: reason, Record: r}}
	}
	gs := []goroutine{g(1, "select (no cases)")}
	for _, w := range []uint64{10, 11, 12} {
		gs = append(gs, g(w, "chan receive", 1))
	}
	for _, l := range []uint64{20, 21, 22, 23, 24} {
		gs = append(gs, g(l, "sleep", 10+(l-20)/2, 1))
	}
	gs = append(gs, g(30, "sleep", 5, 1))    // 5 has exited
	gs = append(gs, g(40, "sleep", 6, 7, 1)) // so have 6 and its creator 7
	s := &goroutineSet{gs: gs}
	var b strings.Builder
	s.writeTree(&b)
	want := `goroutine 1 [select (no cases)] ?
  goroutine 5 [exited] ?
    goroutine 30 [sleep] ?
  x2 ? [chan receive] (goroutines 10, 11)
    x4 ? [sleep] (goroutines 20, 21, 22, ...)
  goroutine 12 [chan receive] ?
    goroutine 24 [sleep] ?
  goroutine [exited] ?
    goroutine 6 [exited] ?
      goroutine 40 [sleep] ?
`
	if b.String() != want {
		t.Errorf("tree:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := s.writeTreeJSON(&b); err != nil {
		t.Fatal(err)
	}
	var root treeJSON
	if err := json.Unmarshal([]byte(b.String()), &root); err != nil {
		t.Fatal(err)
	}
	if len(root.Children) != 4 || !slices.Equal(root.Children[1].Goids, []uint64{10, 11}) ||
		len(root.Children[1].Children) != 1 || !slices.Equal(root.Children[1].Children[0].Goids, []uint64{20, 21, 22, 23}) ||
		root.Children[0].State != "exited" || root.Children[1].Children[0].WaitReason != "sleep" ||
		root.Children[3].Count != 1 || len(root.Children[3].Goids) != 0 || !slices.Equal(root.Children[3].Children[0].Goids, []uint64{6}) {
		t.Errorf("tree -json: %s", b.String())
	}
}

// TestTreeLiveCreator: a live goroutine whose children have exited keeps
// their descendants (ABI version 2 names only a goroutine's parent, so
// the tree matches the ancestor entry's sites, depth and older
// ancestors), and an ancestor that several known goroutines match stays
// apart, saying which live ones it may be.
func TestTreeLiveCreator(t *testing.T) {
	acceptor := lineageabi.Anc{GoPC: 0x2003} // no start: no binary to name it
	main := lineageabi.Anc{Goid: 1}
	rec := func(goid uint64, self lineageabi.Anc, anc ...lineageabi.Anc) goroutine {
		r := &lineageabi.Record{Goid: goid, StartPC: self.StartPC, GoPC: self.GoPC, Depth: uint32(len(anc)), Anc: anc}
		if len(anc) > 0 {
			r.ParentGoid = anc[0].Goid
		}
		return goroutine{Goroutine: &lineageabi.Goroutine{Goid: goid, Status: lineageabi.StatusWaiting, WaitReason: "sleep", Record: r}}
	}
	conn := func(goid uint64) lineageabi.Anc { return lineageabi.Anc{Goid: goid, GoPC: 0x2007} }
	leaf := lineageabi.Anc{GoPC: 0x2020}
	accept := func(goid uint64) lineageabi.Anc { a := acceptor; a.Goid = goid; return a }
	for _, tc := range []struct {
		name string
		gs   []goroutine
		want string
	}{
		{"one acceptor", []goroutine{
			rec(1, lineageabi.Anc{}),
			rec(3, acceptor, main),
			rec(20, leaf, conn(7), acceptor, main), // conn 7 has exited
			rec(21, leaf, conn(8), acceptor, main), // so has conn 8
		}, `goroutine 1 [sleep] ?
  goroutine 3 [sleep] ?
    x2 ? [exited] (goroutines 7, 8)
      x2 ? [sleep] (goroutines 20, 21)
`},
		{"two live acceptors", []goroutine{
			rec(1, lineageabi.Anc{}),
			rec(3, acceptor, main),
			rec(4, acceptor, main),
			rec(20, leaf, conn(7), acceptor, main),
		}, `goroutine 1 [sleep] ?
  x2 ? [sleep] (goroutines 3, 4)
  goroutine [exited, or one of goroutines 3, 4] ?
    goroutine 7 [exited] ?
      goroutine 20 [sleep] ?
`},
		{"a live and an exited acceptor", []goroutine{
			rec(1, lineageabi.Anc{}),
			rec(3, acceptor, main),
			rec(30, lineageabi.Anc{GoPC: 0x2007}, accept(5), main), // 5 has exited
			rec(20, leaf, conn(7), acceptor, main),
		}, `goroutine 1 [sleep] ?
  goroutine 3 [sleep] ?
  goroutine 5 [exited] ?
    goroutine 30 [sleep] ?
  goroutine [exited, or one of goroutines 3] ?
    goroutine 7 [exited] ?
      goroutine 20 [sleep] ?
`},
	} {
		var b strings.Builder
		(&goroutineSet{gs: tc.gs}).writeTree(&b)
		if b.String() != tc.want {
			t.Errorf("%s: tree:\n%s\nwant:\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// TestWaitsListsEveryWaiter: every goroutine that ps -json shows waiting
// is in some group of waits -json (the runtime's own included), and
// nothing else is.
func TestWaitsListsEveryWaiter(t *testing.T) {
	want := map[uint64]bool{}
	for _, g := range parsePsJSON(t, parkedOutput(t, "ps", "-json")) {
		if g.State == "waiting" {
			want[g.Goid] = true
		}
	}
	got := map[uint64]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(parkedOutput(t, "waits", "-json"), "\n"), "\n") {
		var g waitGroupJSON
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("waits -json: %v in line %q", err, l)
		}
		for _, w := range g.Goroutines {
			got[w.Goid] = true
		}
	}
	if len(want) < 13 || !maps.Equal(got, want) {
		t.Errorf("waits lists goroutines %v; ps shows %v waiting", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}
