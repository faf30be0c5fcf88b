package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"fpsafe.dev/misc/internal/lineageabi"
)

// tree: every goroutine under the goroutine that created it. A creator
// that has exited is known from its descendants' ancestor entries (its
// goid and start PC) and shown as exited. Siblings are ordered by
// function, then goid, and siblings of the same shape (function, state,
// and descendants of the same shape) are shown once, as one node that
// lists them all: its children are those of all of them, grouped again.

// treeLine is one line of tree: a goroutine, or siblings of one shape.
type treeLine struct {
	goids    []uint64 // ascending
	start    *startName
	state    string // as ps prints it; "exited" for an exited creator
	g        *goroutine
	children []*treeLine
}

// goroutineTree returns the roots of the goroutine tree, in goid order.
func (s *goroutineSet) goroutineTree() []*treeLine {
	live := map[uint64]*goroutine{}
	for i := range s.gs {
		live[s.gs[i].Goid] = &s.gs[i]
	}
	exited := map[uint64]lineageabi.Anc{}
	children := map[uint64][]uint64{}
	hasParent := map[uint64]bool{}
	anon, ambiguous := s.anonymousAncestors(live)
	for i := range s.gs {
		g := &s.gs[i]
		child := g.Goid
		for j, a := range g.Record.Anc {
			id := a.Goid
			if j > 0 {
				if _, ok := live[child]; ok {
					break // a live creator: its own record goes on
				}
				id = anon(g.Record, j)
			}
			if id == 0 {
				break
			}
			if _, ok := live[id]; !ok {
				exited[id] = a
			}
			if !hasParent[child] {
				hasParent[child] = true
				children[id] = append(children[id], child)
			}
			child = id
		}
	}
	name := func(id uint64) string {
		if g, ok := live[id]; ok {
			return s.startFunc(g)
		}
		return s.ancestorFunc(exited[id].StartPC)
	}
	state := func(id uint64) string {
		if g, ok := live[id]; ok {
			return g.state()
		}
		if m := ambiguous[id]; len(m) > 0 {
			return "exited, or one of goroutines " + goidList(m)
		}
		return "exited"
	}
	sorted := func(kids []uint64) []uint64 {
		sort.Slice(kids, func(i, j int) bool {
			if a, b := name(kids[i]), name(kids[j]); a != b {
				return a < b
			}
			return kids[i] < kids[j]
		})
		return kids
	}
	// sig is a subtree's shape.
	sigs := map[uint64]string{}
	var sig func(id uint64) string
	sig = func(id uint64) string {
		if s, ok := sigs[id]; ok {
			return s
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s [%s](", name(id), state(id))
		for _, k := range sorted(children[id]) {
			b.WriteString(sig(k))
			b.WriteByte(',')
		}
		b.WriteByte(')')
		sigs[id] = b.String()
		return sigs[id]
	}
	// group makes nodes of goroutines of one parent's (or several
	// parents') children: one node per shape, in the order of its first.
	var group func(ids []uint64) []*treeLine
	group = func(ids []uint64) []*treeLine {
		var nodes []*treeLine
		bySig := map[string]*treeLine{}
		for _, id := range sorted(ids) {
			n := bySig[sig(id)]
			if n == nil {
				n = &treeLine{state: state(id), g: live[id]}
				if n.g != nil {
					n.start = s.goroutineStart(n.g)
				} else {
					n.start = s.startName(exited[id].StartPC)
				}
				bySig[sig(id)] = n
				nodes = append(nodes, n)
			}
			n.goids = append(n.goids, id)
		}
		for _, n := range nodes {
			var kids []uint64
			for _, id := range n.goids {
				kids = append(kids, children[id]...)
			}
			n.children = group(kids)
		}
		return nodes
	}
	ids := make([]uint64, 0, len(live)+len(exited))
	for id := range live {
		ids = append(ids, id)
	}
	for id := range exited {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var roots []*treeLine
	for _, id := range ids {
		if !hasParent[id] {
			roots = append(roots, group([]uint64{id})...)
		}
	}
	return roots
}

// anonBase is the first of the ids the tree gives ancestors that have no
// goid (ABI version 2 keeps only the parent's): above every goid.
const anonBase = 1 << 63

// anonymousAncestors returns how the tree names ancestor j (> 0) of a
// record, which has no goid (ABI version 2 keeps the parent's only): the
// goroutine it must be, or an id above anonBase shared by the ancestors
// with the same sites as far as the records go back.
//
// The goroutines the tree knows are the live ones and the exited parents
// (whose goids their children's records keep). One of them is the
// ancestor if it is the only one that matches the ancestor's entry: the
// same start and creation sites, the depth the ancestor has (the record's
// depth less j+1), and the same ancestors' sites as far as both records
// go. So an acceptor that still runs keeps the descendants of the
// connections it started that have exited. Where several match, the
// ancestor stays anonymous and ambiguous lists the live ones among them
// (by its anonymous id), for the tree to say so. An exited goroutine that
// no record names by goid is not known, so it cannot be told apart.
func (s *goroutineSet) anonymousAncestors(live map[uint64]*goroutine) (anon func(r *lineageabi.Record, j int) uint64, ambiguous map[uint64][]uint64) {
	known := map[[2]uint64][]lineEntry{}
	add := func(id uint64, r *lineageabi.Record, j int) {
		e := lineEntry{id: id, depth: int64(r.Depth) - int64(j), chain: r.Anc[j:]}
		if j == 0 {
			known[[2]uint64{r.StartPC, r.GoPC}] = append(known[[2]uint64{r.StartPC, r.GoPC}], e)
			return
		}
		a := r.Anc[j-1]
		known[[2]uint64{a.StartPC, a.GoPC}] = append(known[[2]uint64{a.StartPC, a.GoPC}], e)
	}
	exitedParents := map[uint64]bool{}
	for id, g := range live {
		r := g.Record
		if r == nil {
			continue
		}
		add(id, r, 0)
		if p := r.ParentGoid; len(r.Anc) > 0 && p != 0 && live[p] == nil && !exitedParents[p] && r.Flags&lineageabi.RecParentUnknown == 0 {
			exitedParents[p] = true
			add(p, r, 1)
		}
	}
	for _, es := range known {
		slices.SortFunc(es, func(a, b lineEntry) int { return cmp.Compare(a.id, b.id) })
	}
	ids := map[string]uint64{}
	ambiguous = map[uint64][]uint64{}
	return func(r *lineageabi.Record, j int) uint64 {
		a := r.Anc[j]
		var match []uint64
		if r.Flags&lineageabi.RecParentUnknown == 0 {
			for _, e := range known[[2]uint64{a.StartPC, a.GoPC}] {
				if e.isAncestor(r, j) {
					match = append(match, e.id)
				}
			}
		}
		if len(match) == 1 {
			return match[0]
		}
		var key strings.Builder
		for _, a := range r.Anc[j:] {
			fmt.Fprintf(&key, "%x:%x,", a.StartPC, a.GoPC)
		}
		id, ok := ids[key.String()]
		if !ok {
			id = anonBase + uint64(len(ids))
			ids[key.String()] = id
		}
		for _, m := range match {
			if live[m] != nil && !slices.Contains(ambiguous[id], m) {
				ambiguous[id] = append(ambiguous[id], m)
			}
		}
		return id
	}, ambiguous
}

// A lineEntry is a goroutine the tree knows: its goid, its depth (how many
// creators it has) and its creators' entries as far as a record keeps
// them.
type lineEntry struct {
	id    uint64
	depth int64
	chain []lineageabi.Anc
}

// isAncestor reports whether e can be ancestor j of record r: its depth is
// the ancestor's, and its creators' sites are r's beyond j, as far as both
// records go.
func (e lineEntry) isAncestor(r *lineageabi.Record, j int) bool {
	if e.depth != int64(r.Depth)-int64(j)-1 {
		return false
	}
	rest := r.Anc[j+1:]
	for k := 0; k < len(e.chain) && k < len(rest); k++ {
		if e.chain[k].StartPC != rest[k].StartPC || e.chain[k].GoPC != rest[k].GoPC {
			return false
		}
	}
	return true
}

// goids is ids without the anonymous ancestors' (anonBase and above).
func goids(ids []uint64) []uint64 {
	var out []uint64
	for _, id := range ids {
		if id < anonBase {
			out = append(out, id)
		}
	}
	return out
}

// listedGoids is how many goids a collapsed line lists before "...".
const listedGoids = 3

// goidList prints the first listedGoids of ids: "8, 12, 15, ...".
func goidList(ids []uint64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == listedGoids {
			b.WriteString("...")
			break
		}
		fmt.Fprint(&b, id)
	}
	return b.String()
}

// funcName is a start name's function, "?" for none.
func funcName(sn *startName) string {
	if sn == nil {
		return "?"
	}
	return sn.Fn.Func
}

// writeTree prints the tree, one goroutine or group of siblings per line:
// "goroutine 7 [chan receive] main.worker", or for siblings of one shape
// "x300 main.readLoop [IO wait] (goroutines 8, 12, 15, ...)".
func (s *goroutineSet) writeTree(w io.Writer) {
	var walk func(n *treeLine, depth int)
	walk = func(n *treeLine, depth int) {
		indent := strings.Repeat("  ", depth)
		switch ids := goids(n.goids); {
		case len(n.goids) == 1 && len(ids) == 1:
			fmt.Fprintf(w, "%sgoroutine %d [%s] %s\n", indent, n.goids[0], n.state, funcName(n.start))
		case len(n.goids) == 1:
			fmt.Fprintf(w, "%sgoroutine [%s] %s\n", indent, n.state, funcName(n.start))
		case len(ids) == 0:
			fmt.Fprintf(w, "%sx%d %s [%s]\n", indent, len(n.goids), funcName(n.start), n.state)
		default:
			fmt.Fprintf(w, "%sx%d %s [%s] (goroutines %s)\n", indent, len(n.goids), funcName(n.start), n.state, goidList(ids))
		}
		for _, k := range n.children {
			walk(k, depth+1)
		}
	}
	for _, r := range s.goroutineTree() {
		walk(r, 0)
	}
}

// treeJSON is one node of tree -json.
type treeJSON struct {
	Count        int         `json:"count"`
	Goids        []uint64    `json:"goids"`
	Start        *frameJSON  `json:"start,omitempty"`
	StartWrapper *frameJSON  `json:"start_wrapper,omitempty"`
	State        string      `json:"state"`
	WaitReason   string      `json:"wait_reason,omitempty"`
	Children     []*treeJSON `json:"children"`
}

// writeTreeJSON prints the tree as one JSON object per root and line.
func (s *goroutineSet) writeTreeJSON(w io.Writer) error {
	var node func(n *treeLine) *treeJSON
	node = func(n *treeLine) *treeJSON {
		j := &treeJSON{Count: len(n.goids), Goids: goids(n.goids), State: "exited", Children: []*treeJSON{}}
		if j.Goids == nil {
			j.Goids = []uint64{}
		}
		if n.start != nil {
			j.Start, j.StartWrapper = &n.start.Fn, n.start.Wrapper
		}
		if n.g != nil {
			j.State = n.g.jsonState()
			if j.State == "waiting" {
				j.WaitReason = n.g.WaitReason
			}
		}
		for _, k := range n.children {
			j.Children = append(j.Children, node(k))
		}
		return j
	}
	enc := json.NewEncoder(w)
	for _, r := range s.goroutineTree() {
		if err := enc.Encode(node(r)); err != nil {
			return err
		}
	}
	return nil
}
