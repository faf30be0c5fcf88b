package lineageabi

import (
	"fmt"
	"strings"
)

// Damaged input (doc/lineage-abi.md, "Reading damaged memory"). A core cut
// short or corrupt holds records, g structs and sudogs that cannot be read,
// and values that cannot be true. The reader does not give up on the first
// of them: it skips what cannot be read and counts it in a Damage, and it
// marks what cannot be true (Plausible) instead of printing it as fact. A
// stopped live process should show neither; a reader says so if it does.

// Damage counts what a read of damaged memory skipped or flagged.
type Damage struct {
	Goroutines int   // records whose record, g or sudogs could not be read, or whose g's goid is impossible
	Blocks     int   // registry blocks whose header could not be read or makes no sense
	Regions    int   // regions the region list could not reach
	Flagged    int   // impossible values shown as unknown ("?")
	First      error // the first thing skipped or flagged
}

// Damaged reports whether anything was skipped or flagged.
func (d *Damage) Damaged() bool {
	return d.Goroutines+d.Blocks+d.Regions+d.Flagged > 0
}

// skip adds k to the counter *n, keeping err if it is the first.
func (d *Damage) skip(n *int, k int, err error) {
	*n += max(k, 1)
	if d.First == nil {
		d.First = err
	}
}

// Add adds e's counts to d.
func (d *Damage) Add(e Damage) {
	d.Goroutines += e.Goroutines
	d.Blocks += e.Blocks
	d.Regions += e.Regions
	d.Flagged += e.Flagged
	if d.First == nil {
		d.First = e.First
	}
}

// Bad marks the values of a record that Plausible found impossible. They
// are zeroed in the record; a printer shows them as unknown.
type Bad uint8

const (
	BadGoid    Bad = 1 << iota // Record.Goid
	BadParent                  // Record.ParentGoid
	BadStartPC                 // Record.StartPC
	BadGoPC                    // Record.GoPC (and so the creation stack)
	BadAnc                     // an ancestor entry: Record.Anc ends before it
)

var badNames = [...]string{"goid", "parent", "start", "created_by", "ancestors"}

// Names lists the marked values by their ps -json field names.
func (b Bad) Names() []string {
	var out []string
	for i, n := range badNames {
		if b&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

func (b Bad) String() string { return strings.Join(b.Names(), ", ") }

// Range is an address range [Lo, Hi).
type Range struct{ Lo, Hi uint64 }

// GoidCeiling bounds every goid: the runtime hands out goids one by one (in
// batches per P), and no process creates 2^40 goroutines (a million a
// second for twelve days).
const GoidCeiling = 1 << 40

// Plausible holds the rules that tell a value the runtime can have written
// from corrupt memory. They are kept here, in one place, and documented in
// doc/lineage-abi.md ("Reading damaged memory"):
//
//   - A goid (a g's, a record's, a parent's or an ancestor's) is 1 or more
//     and at most MaxGoid: GoidCeiling, or, when the registry was read,
//     twice the largest goid of a g whose record names the same goid, plus
//     2^20 (a creator's goid can exceed its descendant's, as goids are handed
//     out in batches per P, but not by that much).
//   - A start or creation PC lies in the executable's code (Text), or is 0,
//     which means none (a cgo callback's goroutine has neither, one the
//     runtime started has no creation PC).
//   - A status is one of the runtime's values that the header's status map
//     names (else StatusUnknown, shown as "?").
//
// A g whose goid breaks the rule is not listed (its goroutine is counted
// as skipped); a record's values that break it are zeroed and marked in
// Record.Bad, and the ancestors from the first one that breaks it on are
// dropped.
type Plausible struct {
	MaxGoid uint64
	Text    []Range // runtime addresses of the executable's code; nil: PCs are not checked
}

// NewPlausible returns the rules for a target whose code is text, with
// MaxGoid learnt from gs (the registry's goroutines; nil if not read).
func NewPlausible(text []Range, gs []Goroutine) *Plausible {
	p := &Plausible{MaxGoid: GoidCeiling, Text: text}
	var seen uint64
	for i := range gs {
		if g := &gs[i]; g.Record != nil && g.Goid == g.Record.Goid && g.Goid <= GoidCeiling {
			seen = max(seen, g.Goid)
		}
	}
	if seen > 0 {
		p.MaxGoid = min(GoidCeiling, 2*seen+1<<20)
	}
	return p
}

func (p *Plausible) goid(id uint64) bool { return id >= 1 && id <= p.MaxGoid }

// pc reports whether pc can be a start or creation PC: 0 (none) or in
// the executable's code.
func (p *Plausible) pc(pc uint64) bool {
	if pc == 0 || p.Text == nil {
		return true
	}
	for _, r := range p.Text {
		if r.Lo <= pc && pc < r.Hi {
			return true
		}
	}
	return false
}

// CheckRecord zeroes and marks the impossible values of r (see Plausible)
// and returns how many it marked. A record checked before is not counted
// again.
func (p *Plausible) CheckRecord(r *Record) int {
	if r == nil || r.checked {
		return 0
	}
	r.checked = true
	check := func(bit Bad, v *uint64, ok bool) {
		if !ok {
			r.Bad |= bit
			*v = 0
		}
	}
	check(BadGoid, &r.Goid, p.goid(r.Goid))
	// Goroutines the runtime started, and goroutine 1, have parent 0.
	check(BadParent, &r.ParentGoid, r.ParentGoid == 0 || p.goid(r.ParentGoid))
	// A startpc of 0 is none (a cgo callback's goroutine), shown as unknown.
	check(BadStartPC, &r.StartPC, p.pc(r.StartPC))
	check(BadGoPC, &r.GoPC, p.pc(r.GoPC))
	if r.Bad&BadGoPC != 0 {
		r.Stack = nil
	}
	if len(r.Anc) > 0 {
		r.Anc[0].Goid = r.ParentGoid // as checked; older ancestors have none
	}
	for i, a := range r.Anc {
		if i > 0 && a.Goid != 0 || !p.pc(a.StartPC) || !p.pc(a.GoPC) {
			r.Bad |= BadAnc
			r.Anc = r.Anc[:i]
			break
		}
	}
	n := 0
	for b := r.Bad; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// Goroutines applies the rules to goroutines read from the registry: it
// drops those whose g's goid is impossible (counted in d.Goroutines) and
// marks the impossible values of the others (counted in d.Flagged).
func (p *Plausible) Goroutines(gs []Goroutine, d *Damage) []Goroutine {
	out := gs[:0]
	for _, g := range gs {
		if !p.goid(g.Goid) {
			d.skip(&d.Goroutines, 1, fmt.Errorf("g %#x: goid %d was never handed out (corrupt memory?)", g.G, g.Goid))
			continue
		}
		if g.Status == StatusUnknown {
			d.skip(&d.Flagged, 1, fmt.Errorf("g %#x (goroutine %d): status not in the runtime's status map", g.G, g.Goid))
		}
		if n := p.CheckRecord(g.Record); n > 0 {
			d.skip(&d.Flagged, n, fmt.Errorf("goroutine %d: impossible %s in its lineage record", g.Goid, g.Record.Bad))
		}
		out = append(out, g)
	}
	return out
}
