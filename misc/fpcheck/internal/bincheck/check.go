// Package bincheck checks, in a Go ELF binary, that the functions where a
// frame-pointer chain must end or link do so before they call anything.
//
// Three rules, each checked on every path through the machine code from the
// function's entry (the decoded control-flow graph, not a linear scan):
//
//   - root: a TOPFRAME function, or a function entered from C or the kernel
//     (crosscall2, sigtramp, ...), must clear the frame pointer or set it to a
//     deliberate link (a value loaded from memory, such as g.sched.bp) before
//     its first call. Otherwise the callee's frame record points at whatever
//     frame pointer its caller had, which for C code built without frame
//     pointers is garbage.
//   - C ABI: a function entered from C must save the frame pointer (a
//     callee-saved register in the platform ABI) before changing it.
//   - stack switch: after a function loads SP from memory or from a register
//     not derived from SP, a call on the new stack must be preceded by a write
//     of the frame pointer made after the switch, unless the function is one
//     of the documented links below, where the chain deliberately continues
//     into the old stack. A second switch is taken to return to the entry
//     stack, where the frame pointer is valid again. A frame pointer
//     computed, before the switch, from the very register SP is then loaded
//     from (moved only by register arithmetic in between) already points
//     into the new stack and counts as written.
//
// Calls to morestack are exempt: morestack establishes its own root. So are
// calls to leaves that never store the frame pointer (arm64's load_g): they
// leave no frame record for an unwinder to follow.
package bincheck

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"fpsafe.dev/misc/fpcheck/internal/fprule"
	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
)

var errShort = errors.New("truncated instruction")

// Finding is one violation.
type Finding struct {
	Func   string `json:"func"`
	Off    uint64 `json:"off"`
	PC     uint64 `json:"pc"`
	Insn   string `json:"insn"`
	Rule   string `json:"rule"` // "root", "c-abi", "stack-switch"
	Detail string `json:"detail"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s+%#x (%#x): %s: %s [%s]", f.Func, f.Off, f.PC, f.Rule, f.Detail, f.Insn)
}

// FuncReport is the result for one checked function.
type FuncReport struct {
	Name     string    `json:"name"`
	Entry    uint64    `json:"entry"`
	Kinds    []string  `json:"kinds"`
	Findings []Finding `json:"findings,omitempty"`
	Note     string    `json:"note,omitempty"`
}

// Report is the result for one binary.
type Report struct {
	Path   string       `json:"path"`
	Arch   string       `json:"arch"`
	NFuncs int          `json:"nfuncs"`
	Funcs  []FuncReport `json:"funcs"`
}

// Violations counts the findings.
func (r *Report) Violations() int {
	n := 0
	for _, f := range r.Funcs {
		n += len(f.Findings)
	}
	return n
}

// Disassemble writes the decoded instructions of the function named name, as
// fpcheck sees them, to w.
func Disassemble(w io.Writer, b *gobin.Binary, name string) error {
	f := b.LookupFunc(name)
	if f == nil {
		return fmt.Errorf("no function %q in the pclntab", name)
	}
	decode := decodeAMD64
	if b.Arch == "arm64" {
		decode = decodeARM64
	}
	code, err := b.Code(f)
	if err != nil {
		return err
	}
	insns, _ := decodeAll(code, f.Entry, decode)
	for _, in := range insns {
		fmt.Fprintf(w, "%s+%#x\t%-40s flow=%d fp=%d fpSt=%v sp=%d def=%d<-%d\n", f.Name, in.pc-f.Entry, in.text, in.flow, in.fp, in.fpSt, in.sp, in.def, in.defSrc)
	}
	return nil
}

// Check analyses b.
func Check(b *gobin.Binary) (*Report, error) {
	r := &Report{Path: b.Path, Arch: b.Arch, NFuncs: len(b.Funcs)}
	decode := decodeAMD64
	fpReg := amd64BP
	if b.Arch == "arm64" {
		decode, fpReg = decodeARM64, arm64FP
	}
	for i := range b.Funcs {
		f := &b.Funcs[i]
		root := f.TopFrame()
		_, cabi := fpchain.CEntries[f.Name]
		_, isSwitch := fpchain.Switches[f.Name]
		sw := f.Flag&gobin.FlagSPWrite != 0 || isSwitch
		if !root && !cabi && !sw {
			continue
		}
		code, err := b.Code(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.Name, err)
		}
		insns, err := decodeAll(code, f.Entry, decode)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.Name, err)
		}
		fr := FuncReport{Name: f.Name, Entry: f.Entry}
		if root {
			fr.Kinds = append(fr.Kinds, "topframe")
		}
		if cabi {
			fr.Kinds = append(fr.Kinds, "c-abi")
		}
		if sw {
			fr.Kinds = append(fr.Kinds, "spwrite")
		}
		_, link := fpchain.Links[f.Name]
		if link {
			fr.Kinds = append(fr.Kinds, "documented-link")
		}
		a := &analysis{b: b, f: f, insns: insns, fp: fpReg, fn: fprule.Function{Root: root || cabi, Link: link}, cabi: cabi, decode: decode}
		a.run()
		fr.Findings = a.findings
		fr.Note = a.note()
		r.Funcs = append(r.Funcs, fr)
	}
	return r, nil
}

func decodeAll(code []byte, entry uint64, decode func([]byte, uint64) (insn, error)) ([]insn, error) {
	var out []insn
	for off := 0; off < len(code); {
		in, err := decode(code[off:], entry+uint64(off))
		if err != nil || in.size == 0 {
			// Padding or data after the last instruction.
			in = insn{pc: entry + uint64(off), size: 1, text: "?", flow: flowTrap, def: -1, defSrc: -1}
		}
		out = append(out, in)
		off += in.size
	}
	return out, nil
}

type analysis struct {
	b     *gobin.Binary
	f     *gobin.Func
	insns []insn
	fp    int
	fn    fprule.Function
	cabi  bool

	findings  []Finding
	seen      map[string]bool
	leafCache map[uint64]bool
	decode    func([]byte, uint64) (insn, error)
	clears    map[uint64]bool
	switches  int
}

func (a *analysis) index(pc uint64) int {
	i := sort.Search(len(a.insns), func(i int) bool { return a.insns[i].pc >= pc })
	if i < len(a.insns) && a.insns[i].pc == pc {
		return i
	}
	return -1
}

func (a *analysis) report(in *insn, rule, detail string) {
	key := fmt.Sprint(in.pc, rule)
	if a.seen[key] {
		return
	}
	a.seen[key] = true
	text := in.text
	if in.target != 0 {
		if op, _, ok := strings.Cut(text, " "); ok {
			text = op + " " + a.target(in)
		}
	}
	a.findings = append(a.findings, Finding{Func: a.f.Name, Off: in.pc - a.f.Entry, PC: in.pc, Insn: text, Rule: rule, Detail: detail})
}

func (a *analysis) target(in *insn) string {
	if in.target == 0 {
		return "an indirect target"
	}
	if g := a.b.FindFunc(in.target); g != nil {
		if g.Entry == in.target {
			return g.Name
		}
		return fmt.Sprintf("%s+%#x", g.Name, in.target-g.Entry)
	}
	return fmt.Sprintf("%#x", in.target)
}

func (a *analysis) run() {
	a.seen = map[string]bool{}
	a.leafCache = map[uint64]bool{}
	a.clears = map[uint64]bool{}
	type item struct {
		i int
		s fprule.State
	}
	visited := map[item]bool{}
	work := []item{{0, fprule.Entry(reg(a.fp), false)}}
	for len(work) > 0 {
		it := work[len(work)-1]
		work = work[:len(work)-1]
		for it.i >= 0 && it.i < len(a.insns) {
			if visited[it] {
				break
			}
			visited[it] = true
			in := &a.insns[it.i]
			s, cont, jump := a.step(in, it.s)
			if jump >= 0 {
				work = append(work, item{jump, s})
			}
			if !cont {
				break
			}
			it = item{it.i + 1, s}
		}
	}
	sort.Slice(a.findings, func(i, j int) bool { return a.findings[i].PC < a.findings[j].PC })
}

// step applies in to s. It returns the new state, whether execution continues
// at the next instruction, and the index of a branch target to explore (-1).
func (a *analysis) step(in *insn, s fprule.State) (fprule.State, bool, int) {
	e := in.effect()
	// On arm64 the clone system call itself puts the child on the new
	// stack. (Only its first system call; the child's gettid does not
	// switch.)
	e.NewThread = a.b.Arch == "arm64" && a.f.Name == "runtime.clone" && strings.HasPrefix(in.text, "SVC")
	s, ev := s.Apply(e)
	if ev.Deliberate {
		if a.cabi && ev.UnsavedWrite {
			a.report(in, "c-abi", "changes the C caller's frame pointer (callee-saved) before saving it")
		}
		a.clears[in.pc] = true
	}
	if ev.Switched {
		a.switches++
	}

	leaves := func() bool {
		if in.flow == flowJump {
			return a.index(in.target) < 0
		}
		return in.flow == flowIndirect
	}
	if in.flow == flowCall || leaves() {
		name := a.target(in)
		verb := "calls"
		if in.flow != flowCall {
			verb = "jumps to"
		}
		exempt := fpchain.RootCallees[name] || in.flow == flowCall && a.storesNoFrame(in.target)
		var v fprule.Verdict
		s, v = s.Call(a.fn, fprule.Call{Returns: in.flow == flowCall, Exempt: exempt})
		if v.Root {
			a.report(in, "root", fmt.Sprintf("%s %s with the caller's frame pointer live (not cleared or linked since entry)", verb, name))
		}
		if v.Switch {
			a.report(in, "stack-switch", fmt.Sprintf("%s %s on a new stack with the frame pointer still pointing into the old stack", verb, name))
		}
	}
	switch in.flow {
	case flowCall, flowNext:
		return s, true, -1
	case flowCondJump:
		return s, true, a.index(in.target)
	case flowJump:
		return s, false, a.index(in.target)
	}
	return s, false, -1
}

// storesNoFrame reports whether the function at pc is a leaf that never
// stores the frame pointer (arm64's load_g and save_g): calling it with any
// frame pointer leaves no frame record for an unwinder to follow.
func (a *analysis) storesNoFrame(pc uint64) bool {
	if pc == 0 {
		return false
	}
	if v, ok := a.leafCache[pc]; ok {
		return v
	}
	a.leafCache[pc] = false
	f := a.b.FindFunc(pc)
	if f == nil || f.Entry != pc {
		return false
	}
	code, err := a.b.Code(f)
	if err != nil {
		return false
	}
	insns, _ := decodeAll(code, f.Entry, a.decode)
	steps := make([]fprule.LeafStep, len(insns))
	for i, in := range insns {
		steps[i] = fprule.LeafStep{
			SavesFP: in.fpSt,
			Calls:   in.flow == flowCall || in.flow == flowIndirect,
			Leaves:  in.flow == flowJump && (in.target < f.Entry || in.target >= f.End),
		}
	}
	a.leafCache[pc] = fprule.StoresNoFrame(steps)
	return a.leafCache[pc]
}

func (a *analysis) note() string {
	var parts []string
	if a.fn.Root && len(a.findings) == 0 {
		var offs []string
		for pc := range a.clears {
			offs = append(offs, fmt.Sprintf("+%#x", pc-a.f.Entry))
		}
		sort.Strings(offs)
		if len(offs) > 0 {
			parts = append(parts, "frame pointer cleared or linked at "+strings.Join(offs, ","))
		} else {
			parts = append(parts, "makes no call")
		}
	}
	if a.fn.Link {
		parts = append(parts, "documented link: "+fpchain.Links[a.f.Name])
	}
	if a.f.Name == fpchain.CgoCallbackLink.Entry {
		// The link through C's frames is made and checked at run time
		// (cgocallbackg), not by this function's code.
		parts = append(parts, "run-time link: "+fpchain.CgoCallbackLink.Why)
	}
	if a.switches == 0 && !a.fn.Root {
		parts = append(parts, "no stack switch")
	}
	return strings.Join(parts, "; ")
}

// Write prints r: one line per finding, then a line per checked function.
// Stack-switching functions without findings are listed only when verbose.
func (r *Report) Write(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "%s: %s, %d functions\n", r.Path, r.Arch, r.NFuncs)
	for _, f := range r.Funcs {
		for _, v := range f.Findings {
			fmt.Fprintf(w, "%s: %s\n", r.Path, v)
		}
	}
	fmt.Fprintf(w, "  %-6s %-36s %-10s %-28s %s\n", "RESULT", "FUNCTION", "ENTRY", "KIND", "NOTE")
	nfail, nok := 0, 0
	for _, f := range r.Funcs {
		res := "ok"
		if len(f.Findings) > 0 {
			res = "FAIL"
			nfail++
		} else {
			nok++
		}
		interesting := len(f.Findings) > 0 || len(f.Kinds) > 1 || f.Kinds[0] != "spwrite"
		if !interesting && !verbose {
			continue
		}
		note := f.Note
		if len(f.Findings) > 0 {
			note = fmt.Sprintf("%d finding(s)", len(f.Findings))
		}
		fmt.Fprintf(w, "  %-6s %-36s %#-10x %-28s %s\n", res, f.Name, f.Entry, strings.Join(f.Kinds, ","), note)
	}
	fmt.Fprintf(w, "  %d functions checked: %d ok, %d with violations (%d findings)\n", nok+nfail, nok, nfail, r.Violations())
}
