package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

// openCore opens a core file and the executable it came from. A damaged
// core (cut short, corrupt headers or notes) is opened all the same; what
// it lost is counted in the snapshot's damage.
func openCore(corePath, exe string, native bool) (*snapshot, func(), error) {
	bin, err := gobin.Open(exe)
	if err != nil {
		if errors.Is(err, gobin.ErrNotGo) {
			return nil, nil, fmt.Errorf("%s is not a Go program: %v", exe, err)
		}
		return nil, nil, err
	}
	abi, err := findABI(bin, native)
	if err != nil {
		bin.Close()
		return nil, nil, err
	}
	c, err := target.OpenCore(corePath, bin.ELF.Machine)
	if err != nil {
		bin.Close()
		return nil, nil, err
	}
	closer := func() { c.Close(); bin.Close() }
	dmg := &damage{core: c.Damage, what: corePath}
	bias, err := coreBias(c, bin, abi)
	if err != nil {
		closer()
		return nil, nil, dmg.with(fmt.Errorf("%s: %v", corePath, err))
	}
	if e, ok := target.AuxvEntry(c.Auxv); ok && e-bias != bin.Entry {
		closer()
		return nil, nil, fmt.Errorf("%s was not dumped from %s (entry point %#x, the executable's is %#x)", corePath, exe, e-bias, bin.Entry)
	}
	if err := sameBuild(c, bin, bias); err != nil {
		closer()
		return nil, nil, fmt.Errorf("%s was not dumped from %s: %v", corePath, exe, err)
	}
	c.SetExe(bin, bias)
	snap := &snapshot{bin: bin, bias: bias, threads: c.Threads, mem: target.NewCachedMem(c), abi: abi, damage: dmg}
	return snap, closer, nil
}

// coreBias is the executable's load bias in core c: from AT_ENTRY in its
// NT_AUXV note, or 0 for a position-dependent executable. A core that lost
// its notes (gcore writes them last) has no auxiliary vector; then a
// position-independent executable's bias is the one at which the lineage
// header is where its self field says it is, or, without the ABI, the one
// at which the core holds the executable's first page (its ELF header).
func coreBias(c *target.Core, bin *gobin.Binary, abi *lineageabi.ABI) (uint64, error) {
	if c.Auxv != nil || !bin.PIE {
		return target.LoadBias(c.Auxv, bin.Entry, bin.PIE)
	}
	first := make([]byte, 64)
	var firstVA uint64
	haveFirst := false
	for _, p := range bin.ELF.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 && p.Filesz >= uint64(len(first)) {
			if _, err := p.ReadAt(first, 0); err == nil {
				firstVA, haveFirst = p.Vaddr, true
			}
			break
		}
	}
	for _, start := range c.SegmentStarts() {
		for _, p := range bin.ELF.Progs {
			if p.Type != elf.PT_LOAD || start < p.Vaddr&^0xfff {
				continue
			}
			bias := start - p.Vaddr&^0xfff
			if bias%0x1000 != 0 {
				continue
			}
			if abi != nil && abi.At(c, bias) {
				return bias, nil
			}
			if abi == nil && haveFirst {
				if b, ok := c.Dumped(firstVA+bias, len(first)); ok && bytes.Equal(b, first) {
					return bias, nil
				}
			}
		}
	}
	return 0, errors.New("the core has no auxiliary vector (its notes were lost) and the load bias of this position-independent executable could not be found in it")
}

// sameBuild compares the executable's build-id notes with the copy the core
// holds (kernel cores keep the first page of each ELF mapping), so a core of
// another build is refused instead of misread.
func sameBuild(c *target.Core, bin *gobin.Binary, bias uint64) error {
	for _, name := range []string{".note.go.buildid", ".note.gnu.build-id"} {
		s := bin.ELF.Section(name)
		if s == nil || s.Size == 0 || s.Size > 4096 {
			continue
		}
		want, err := s.Data()
		if err != nil {
			continue
		}
		got, ok := c.Dumped(s.Addr+bias, len(want))
		if ok && string(got) != string(want) {
			return fmt.Errorf("build IDs differ (%s)", name)
		}
	}
	return nil
}

// damage is what a read of a damaged target skipped or flagged: the core
// file's own damage and what the lineage reader found.
type damage struct {
	what string // the core file (or process) named in the summary
	core target.CoreDamage
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
