package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/opentarget"
	"fpsafe.dev/misc/lineage"
)

// openCore opens a core file and the executable it came from. A damaged
// core (cut short, corrupt headers or notes) is opened all the same; what
// it lost is counted in the snapshot's damage.
func openCore(corePath, exe string, native bool) (*snapshot, func(), error) {
	p, err := lineage.OpenCore(corePath, exe, &lineage.Options{NoLineage: native})
	if err != nil {
		var ce *lineage.CoreError
		if errors.As(err, &ce) {
			err = (&damage{core: ce.Damage, what: corePath}).with(ce.Err)
		}
		return nil, nil, err
	}
	// The executable file symbolizes; the core is read through p.
	e, err := opentarget.OpenExe(exe)
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	bin := e.Bin
	abi, err := findABI(bin, native)
	if err != nil {
		bin.Close()
		p.Close()
		return nil, nil, err
	}
	closer := func() { p.Close(); bin.Close() }
	dmg := &damage{core: p.CoreDamage(), what: corePath}
	snap := &snapshot{bin: bin, bias: p.LoadBias(), threads: sdkThreads(p.Threads()), mem: p, abi: abi, damage: dmg}
	return snap, closer, nil
}

// damage is what a read of a damaged target skipped or flagged: the core
// file's own damage and what the lineage reader found.
type damage struct {
	what string // the core file (or process) named in the summary
	core lineage.CoreDamage
	abi  lineageabi.Damage
}

// err is the one line that sums the damage up, nil if there was none.
func (d *damage) err() error {
	if d == nil || !d.core.Damaged() && !d.abi.Damaged() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", d.what)
	if d.core.Truncated() {
		fmt.Fprintf(&b, "core truncated at %d of %d bytes", d.core.Size, d.core.Want)
	} else {
		b.WriteString("damaged")
	}
	fmt.Fprintf(&b, ": skipped %s", count(d.abi.Goroutines, "goroutine"))
	if d.abi.Blocks > 0 {
		fmt.Fprintf(&b, ", %s", count(d.abi.Blocks, "registry block"))
	}
	fmt.Fprintf(&b, ", %s, %s, %s", count(d.abi.Regions, "region"), count(d.core.Notes, "note"), count(d.core.Segments, "segment"))
	if d.abi.Flagged > 0 {
		fmt.Fprintf(&b, "; %s shown as ?", count(d.abi.Flagged, "impossible value"))
	}
	switch {
	case len(d.core.Details) > 0:
		fmt.Fprintf(&b, " (first: %s)", d.core.Details[0])
	case d.abi.First != nil:
		fmt.Fprintf(&b, " (first: %v)", d.abi.First)
	}
	return errors.New(b.String())
}

// with is err, followed by the damage summary if there is one: for an
// error that ends the read of a damaged target.
func (d *damage) with(err error) error {
	if derr := d.err(); derr != nil {
		return fmt.Errorf("%w; %v", err, derr)
	}
	return err
}

// addView adds what the lineage reader skipped or flagged in view. A view
// is loaded once for the threads and once for the registry: its regions
// are counted once.
func (d *damage) addView(view *lineageabi.View) {
	if d == nil {
		return
	}
	v := view.Damage
	d.abi.Regions, v.Regions = max(d.abi.Regions, v.Regions), 0
	d.abi.Add(v)
}

// addFlagged counts n impossible values.
func (d *damage) addFlagged(n int, err error) {
	if d != nil {
		d.abi.Add(lineageabi.Damage{Flagged: n, First: err})
	}
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// registryGoroutines reads the goroutines of view's registry, leaves out
// and flags what lineageabi's plausibility rules find impossible, and
// counts what was skipped in snap's damage.
func registryGoroutines(snap *snapshot, view *lineageabi.View) ([]lineageabi.Goroutine, int, error) {
	gs, torn, err := view.Goroutines()
	if err != nil {
		return nil, 0, err
	}
	gs = lineageabi.NewPlausible(textRanges(snap), gs).Goroutines(gs, &view.Damage)
	snap.damage.addView(view)
	return gs, torn, nil
}

// parent is the goid of g's creator as ps prints it: "?" if impossible.
func (g *goroutine) parent() string {
	if g.Record.Bad&lineageabi.BadParent != 0 {
		return "?"
	}
	return fmt.Sprint(g.Record.ParentGoid)
}

// textRanges are the runtime addresses of the executable's code.
func textRanges(snap *snapshot) []lineageabi.Range {
	var out []lineageabi.Range
	for _, p := range snap.bin.ELF.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			out = append(out, lineageabi.Range{Lo: p.Vaddr + snap.bias, Hi: p.Vaddr + p.Memsz + snap.bias})
		}
	}
	return out
}
