// Package sframecheck verifies a Go binary's SFrame table (.sframe) against
// the binary's own pclntab: for every PC of every function the pclntab
// lists, an FDE and a row must cover it, and the row's rule must agree with
// the SP delta and the frame layout (model.go). Stack roots must be marked
// outermost and signal trampolines as such. The section is read with
// fpsafe.dev/misc/internal/sframe, written from the specification and not
// from the linker's writer, so the check is independent of what it checks.
package sframecheck

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/sframe"
)

// Report is the result of checking one binary.
type Report struct {
	Path      string   `json:"path"`
	Arch      string   `json:"arch"`
	Version   int      `json:"version"`
	Flags     []string `json:"flags"`
	Addr      uint64   `json:"addr"`
	Size      int      `json:"size"`
	Segment   bool     `json:"pt_gnu_sframe"` // found through a PT_GNU_SFRAME segment
	Section   bool     `json:"section"`       // a section header names it .sframe
	FDEs      int      `json:"fdes"`
	FREs      int      `json:"fres"`
	OtherFDEs int      `json:"fdes_outside_go"` // FDEs starting outside every pclntab function (C code)

	Funcs        int      `json:"funcs"`
	FuncsCovered int      `json:"funcs_covered"` // every PC covered
	Unreadable   []string `json:"funcs_unreadable,omitempty"`
	PCs          int      `json:"pcs"`
	PCsUncovered int      `json:"pcs_uncovered"`
	PCsDisagree  int      `json:"pcs_disagreeing"`

	Marks         []Mark    `json:"marks"`
	NGaps         int       `json:"uncovered_ranges"`
	Gaps          []Finding `json:"uncovered"`
	NDisagree     int       `json:"disagreement_ranges"`
	Disagreements []Finding `json:"disagreements"`
	NFindings     int       `json:"findings"` // Findings(), for -json readers

	limit int
	// The last range counted past the limit, to extend instead of count.
	lastFunc, lastWhat string
	lastOff            uint64
	prev               uint64 // offset of the function's previous instruction, or noPrev
}

// A Mark is the check of a function the section must mark: a stack root
// (outermost at every PC) or a signal trampoline (the FDE's signal bit).
type Mark struct {
	Func string `json:"func"`
	Want string `json:"want"` // "outermost" or "signal"
	OK   bool   `json:"ok"`
	Note string `json:"note,omitempty"`
}

// A Finding is a range of PCs of one function with the same problem.
type Finding struct {
	Func       string `json:"func"`
	Addr       uint64 `json:"addr"`
	Start, End uint64 `json:"-"` // offsets from the entry
	Range      string `json:"range"`
	What       string `json:"what"`
}

// Findings counts what makes the check fail.
func (r *Report) Findings() int {
	n := r.NGaps + r.NDisagree + len(r.Unreadable)
	for _, m := range r.Marks {
		if !m.OK {
			n++
		}
	}
	if !r.Segment {
		n++
	}
	return n
}

// Check checks b's SFrame table, listing at most limit findings of each
// kind. The error is for a table that is absent or cannot be decoded.
func Check(b *gobin.Binary, limit int) (*Report, error) {
	sd, err := b.SFrame()
	if err != nil {
		return nil, err
	}
	sec, err := sframe.Decode(sd.Data, sd.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s: .sframe: %w", b.Path, err)
	}
	wantABI := uint8(sframe.ABIAMD64LE)
	if b.Arch == "arm64" {
		wantABI = sframe.ABIAArch64LE
	}
	if sec.ABI != wantABI {
		return nil, fmt.Errorf("%s: .sframe: %w: ABI %d in an %s binary", b.Path, sframe.ErrCorrupt, sec.ABI, b.Arch)
	}
	r := &Report{Path: b.Path, Arch: b.Arch, Version: int(sec.Version), Addr: sd.Addr, Size: len(sd.Data),
		Segment: sd.Segment, Section: sd.Section, FDEs: len(sec.FDEs), FREs: int(sec.NumFREs), limit: limit}
	for bit, name := range map[uint8]string{sframe.FlagFDESorted: "fde-sorted", sframe.FlagFuncStartPCRel: "func-start-pcrel"} {
		if sec.Flags&bit != 0 {
			r.Flags = append(r.Flags, name)
		}
	}
	slices.Sort(r.Flags)
	for i := range sec.FDEs {
		if b.FindFunc(sec.FDEs[i].Start) == nil {
			r.OtherFDEs++
		}
	}
	for i := range b.Funcs {
		r.checkFunc(b, sec, &b.Funcs[i])
	}
	r.NFindings = r.Findings()
	return r, nil
}

// stackRoot reports whether every PC of the function named name must be
// outermost: the bottoms of goroutine and thread stacks, and the process
// entry the kernel jumps to (_rt0_*: in a cgo binary C's _start is the
// entry instead, fpchain.Roots says).
func stackRoot(b *gobin.Binary, name string) bool {
	if slices.Contains(fpchain.StackRoots, name) {
		return true
	}
	r, ok := fpchain.Roots[name]
	cgo := b.LookupFunc("crosscall2") != nil
	return ok && strings.HasPrefix(name, "_rt0_") && (r.Arch == "" || r.Arch == b.Arch) &&
		(r.Cgo == "" || r.Cgo == "yes" && cgo || r.Cgo == "no" && !cgo)
}

func (r *Report) checkFunc(b *gobin.Binary, sec *sframe.Section, f *gobin.Func) {
	r.Funcs++
	m, ok := NewModel(b, f)
	if !ok {
		r.Unreadable = append(r.Unreadable, f.Name)
		return
	}
	root, mayEnd := roles(b, sec, f)
	gaps, disagree, outermost := r.NGaps, r.NDisagree, true
	r.prev = noPrev
	if fde := sec.Lookup(f.Entry); fde != nil {
		// The FDE starts at this function's entry or, when it takes in
		// the functions after its first, at an earlier one's; it ends
		// where the code does, in the padding, or in a later function.
		end := fde.End()
		first := b.FindFunc(fde.Start)
		next := b.FindFunc(f.End)
		if first == nil || first.Entry != fde.Start || end < m.CodeEnd() ||
			end > f.End && (next == nil || next.Entry != f.End) {
			r.disagree(f, f.Entry, fmt.Sprintf("FDE [%#x, %#x) does not match the function's code [%#x, %#x) (padded to %#x)", fde.Start, end, f.Entry, m.CodeEnd(), f.End))
		}
		switch {
		case slices.Contains(fpchain.SignalEntries, f.Name):
			r.Marks = append(r.Marks, Mark{Func: f.Name, Want: "signal", OK: fde.Signal()})
		case fde.Signal() && !slices.Contains(fpchain.SignalFrames, f.Name):
			r.disagree(f, f.Entry, "FDE has the signal-frame bit, but the function is no signal handler entry or return")
		}
	} else if slices.Contains(fpchain.SignalEntries, f.Name) {
		r.Marks = append(r.Marks, Mark{Func: f.Name, Want: "signal", Note: "no FDE"})
	}
	m.Insts(func(pc uint64, e Expected) {
		r.PCs++
		rule, err := sec.RuleAt(pc)
		if err != nil {
			if fde := sec.Lookup(pc); fde != nil && fde.FREAt(pc) != nil {
				r.disagree(f, pc, err.Error()) // a row that makes no rule
			} else {
				r.PCsUncovered++
				r.NGaps += r.add(&r.Gaps, f, pc, errText(err))
			}
			outermost = false
			r.prev = pc - f.Entry
			return
		}
		outermost = outermost && rule.Outermost
		if what := verdict(sec, m, rule, pc, e, root, mayEnd); what != "" {
			r.disagree(f, pc, what)
		}
		r.prev = pc - f.Entry
	})
	if root {
		mk := Mark{Func: f.Name, Want: "outermost", OK: outermost}
		if !outermost {
			mk.Note = "not outermost at every PC"
		}
		r.Marks = append(r.Marks, mk)
	}
	if r.NGaps == gaps && r.NDisagree == disagree {
		r.FuncsCovered++
	}
}

func errText(err error) string {
	switch {
	case err == nil:
		return ""
	case strings.Contains(err.Error(), sframe.ErrNoFDE.Error()):
		return sframe.ErrNoFDE.Error()
	}
	return sframe.ErrNoFRE.Error()
}

func (r *Report) disagree(f *gobin.Func, pc uint64, what string) {
	r.PCsDisagree++
	r.NDisagree += r.add(&r.Disagreements, f, pc, what)
}

// noPrev is Report.prev at a function's first instruction.
const noPrev = ^uint64(0)

// add records the instruction at pc in list, extending the last finding if
// it is the same problem at the previous instruction of the same function
// (r.prev); it returns 1 if it starts a new range. A range is given by its
// first and last instructions.
func (r *Report) add(list *[]Finding, f *gobin.Func, pc uint64, what string) int {
	off := pc - f.Entry
	if n := len(*list); n > 0 {
		last := &(*list)[n-1]
		if last.Func == f.Name && last.What == what && last.End == r.prev {
			last.End = off
			last.Range = rangeText(last.Start, last.End)
			return 0
		}
	}
	if len(*list) < r.limit {
		*list = append(*list, Finding{Func: f.Name, Addr: pc, Start: off, End: off, Range: rangeText(off, off), What: what})
		return 1
	}
	// Past the limit, count ranges without listing them: compare with a
	// one-entry memory of the last range seen.
	if r.lastOff == r.prev && r.lastFunc == f.Name && r.lastWhat == what {
		r.lastOff = off
		return 0
	}
	r.lastFunc, r.lastWhat, r.lastOff = f.Name, what, off
	return 1
}

func rangeText(start, end uint64) string {
	if start == end {
		return fmt.Sprintf("+%#x", start)
	}
	return fmt.Sprintf("+%#x..+%#x", start, end)
}

// roles says whether every instruction of f must be outermost (a stack
// root), and whether any may be. A chain may end at a documented root, or
// where a function switches stacks (the pclntab's SP delta no longer
// describes the frame): an outermost rule there loses no frame the
// frame-pointer walk would find. A signal frame may be outermost too: past
// it, an unwinder reads the interrupted context from the kernel's signal
// frame.
func roles(b *gobin.Binary, sec *sframe.Section, f *gobin.Func) (root, mayEnd bool) {
	mayEnd = fpchain.IsRoot(f.Name) || f.SPWrite()
	if fde := sec.Lookup(f.Entry); fde != nil && fde.Signal() && slices.Contains(fpchain.SignalFrames, f.Name) {
		mayEnd = true
	}
	return stackRoot(b, f.Name), mayEnd
}

// verdict judges the rule at one instruction; "" when it is right.
func verdict(sec *sframe.Section, m *Model, rule sframe.Rule, pc uint64, e Expected, root, mayEnd bool) string {
	switch {
	case root && !rule.Outermost:
		return "not outermost, but the function is a stack root"
	case e.RAReg != "" && !rule.Outermost:
		return fmt.Sprintf("RA is %v, but the instruction returns through %s, which no rule can name: want outermost", rule.RA, e.RAReg)
	case rule.Outermost && !mayEnd && e.RAReg == "":
		return "outermost (RA undefined), but the function has a caller"
	case !rule.Outermost:
		return judge(sec, m, rule, pc, e)
	}
	return ""
}

// judge compares a rule that is not outermost with the model at pc; it
// returns "" when they agree.
func judge(sec *sframe.Section, m *Model, rule sframe.Rule, pc uint64, e Expected) string {
	var bad []string
	cfa := rule.CFA
	switch {
	case cfa.Where == sframe.FromReg && !cfa.Deref && cfa.Reg == sec.SPReg():
		if cfa.Offset != e.CFA {
			bad = append(bad, fmt.Sprintf("CFA is SP%+d, the pclntab's SP delta %d gives SP%+d", cfa.Offset, e.SPDelta, e.CFA))
		}
	case cfa.Where == sframe.FromReg && !cfa.Deref && cfa.Reg == sec.FPReg():
		if !m.InRecord(pc, e) {
			bad = append(bad, fmt.Sprintf("CFA is FP%+d, but the frame pointer does not point at the function's frame record here", cfa.Offset))
		} else if want := m.RecordCFA(e); cfa.Offset != want {
			bad = append(bad, fmt.Sprintf("CFA is FP%+d, the frame record gives FP%+d", cfa.Offset, want))
		}
	default:
		bad = append(bad, fmt.Sprintf("CFA is %v, neither SP%+d nor from the frame record", cfa, e.CFA))
	}
	switch {
	case e.RASaved && (rule.RA.Where != sframe.AtCFA || rule.RA.Offset != e.RA):
		bad = append(bad, fmt.Sprintf("RA is %v, the frame has it at CFA%+d", rule.RA, e.RA))
	case !e.RASaved && rule.RA.Where != sframe.Untracked:
		bad = append(bad, fmt.Sprintf("RA is %v, but it is still in the link register", rule.RA))
	}
	switch rule.FP.Where {
	case sframe.Untracked:
		if m.InRecord(pc, e) {
			bad = append(bad, fmt.Sprintf("FP untracked, but the register points at this frame's record (the caller's is at CFA%+d)", e.FP))
		} else if e.FPSaved && !e.FPInReg {
			bad = append(bad, fmt.Sprintf("FP untracked, but the register no longer holds the caller's frame pointer (saved at CFA%+d)", e.FP))
		}
	case sframe.AtCFA:
		if !e.FPSaved {
			bad = append(bad, fmt.Sprintf("FP is at CFA%+d, but the caller's frame pointer is not saved there at this PC", rule.FP.Offset))
		} else if rule.FP.Offset != e.FP {
			bad = append(bad, fmt.Sprintf("FP is at CFA%+d, the frame has it at CFA%+d", rule.FP.Offset, e.FP))
		}
	default:
		bad = append(bad, fmt.Sprintf("FP is %v, not a stack slot", rule.FP))
	}
	return strings.Join(bad, "; ")
}

// Write prints the report as text.
func (r *Report) Write(w io.Writer) {
	where := "a .sframe section only, in no PT_GNU_SFRAME segment"
	if r.Segment {
		where = "PT_GNU_SFRAME segment"
		if !r.Section {
			where += " (no .sframe section header)"
		}
	}
	flags := strings.Join(r.Flags, ",")
	if flags == "" {
		flags = "none"
	}
	fmt.Fprintf(w, "%s: %s, SFrame version %d in %s at %#x, %d bytes, flags %s\n", r.Path, r.Arch, r.Version, where, r.Addr, r.Size, flags)
	fmt.Fprintf(w, "  FDEs: %d (%d outside Go functions), FREs: %d\n", r.FDEs, r.OtherFDEs, r.FREs)
	fmt.Fprintf(w, "  functions: %d, %d covered and agreeing at every PC\n", r.Funcs, r.FuncsCovered)
	fmt.Fprintf(w, "  PCs: %d instructions checked, %d without coverage (%d range(s)), %d disagreeing (%d range(s))\n", r.PCs, r.PCsUncovered, r.NGaps, r.PCsDisagree, r.NDisagree)
	for _, n := range r.Unreadable {
		fmt.Fprintf(w, "  unreadable SP-delta table: %s\n", n)
	}
	for _, m := range r.Marks {
		res := "ok"
		if !m.OK {
			res = "FAIL"
		}
		note := ""
		if m.Note != "" {
			note = ": " + m.Note
		}
		fmt.Fprintf(w, "  %-4s %-28s %s%s\n", res, m.Func, m.Want, note)
	}
	list := func(title string, n int, fs []Finding) {
		if n == 0 {
			return
		}
		fmt.Fprintf(w, "%s (%d of %d range(s)):\n", title, len(fs), n)
		for _, f := range fs {
			fmt.Fprintf(w, "  %s%s (%#x): %s\n", f.Func, f.Range, f.Addr, f.What)
		}
	}
	list("without coverage", r.NGaps, r.Gaps)
	list("disagreements", r.NDisagree, r.Disagreements)
}

// Dump writes, for each instruction of the function named name, the
// pclntab's SP delta, the model's expectation, the table's rule and the
// verdict: the detail behind a report's line.
func Dump(w io.Writer, b *gobin.Binary, name string) error {
	f := b.LookupFunc(name)
	if f == nil {
		return fmt.Errorf("no function %q in the pclntab", name)
	}
	sd, err := b.SFrame()
	if err != nil {
		return err
	}
	sec, err := sframe.Decode(sd.Data, sd.Addr)
	if err != nil {
		return fmt.Errorf("%s: .sframe: %w", b.Path, err)
	}
	m, ok := NewModel(b, f)
	if !ok {
		return fmt.Errorf("%s: the SP-delta table does not describe the whole function", name)
	}
	if fde := sec.Lookup(f.Entry); fde != nil {
		fmt.Fprintf(w, "%s: FDE [%#x, %#x), %d rows, signal %v\n", name, fde.Start, fde.End(), len(fde.FREs), fde.Signal())
	}
	root, mayEnd := roles(b, sec, f)
	m.Insts(func(pc uint64, e Expected) {
		rule, err := sec.RuleAt(pc)
		got, what := rule.String(), ""
		if err != nil {
			got, what = err.Error(), "uncovered"
		} else {
			what = verdict(sec, m, rule, pc, e, root, mayEnd)
		}
		if what == "" {
			what = "ok"
		}
		fmt.Fprintf(w, "  +%#-6x spd %-4d want CFA=SP%+d RA=%s FP=%s | %s | %s\n", pc-f.Entry, e.SPDelta, e.CFA, savedAt(e.RASaved, e.RA), savedAt(e.FPSaved, e.FP), got, what)
	})
	return nil
}

func savedAt(saved bool, off int32) string {
	if !saved {
		return "reg"
	}
	return fmt.Sprintf("CFA%+d", off)
}
