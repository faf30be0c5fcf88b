package asmfp

import (
	"fmt"
	"strconv"
	"strings"

	"fpsafe.dev/misc/fpcheck/internal/fprule"
	"fpsafe.dev/misc/internal/fpchain"
)

// A finding is reported at a source line.
type finding struct {
	line int
	msg  string
}

// fn is a function prepared for path analysis.
type fn struct {
	f      *asmFunc
	r      *archRegs
	cls    []classified
	labels map[string]int
	regNum map[string]fprule.Reg
}

func prepare(f *asmFunc, r *archRegs) *fn {
	p := &fn{f: f, r: r, labels: map[string]int{}, regNum: map[string]fprule.Reg{}}
	for i, in := range f.insts {
		for _, l := range in.labels {
			p.labels[l] = i
		}
		p.cls = append(p.cls, classify(in, r))
	}
	for i := range p.cls {
		c := &p.cls[i]
		if (c.kind == kCall || c.kind == kTail) && fpchain.NoReturn[calleeName(c.target, f)] {
			c.noReturn = true
		}
		if c.kind == kJump || c.kind == kCondJump {
			if _, ok := p.labels[c.target]; !ok && !strings.HasSuffix(c.target, "(PC)") && c.kind == kJump {
				c.kind = kIndirect
			}
		}
	}
	return p
}

// succ returns the index a jump at i goes to, or -1.
func (p *fn) jumpTarget(i int) int {
	t := p.cls[i].target
	if strings.HasSuffix(t, "(PC)") {
		n, err := strconv.Atoi(strings.TrimSuffix(t, "(PC)"))
		if err != nil {
			return -1
		}
		return i + n
	}
	if j, ok := p.labels[t]; ok {
		return j
	}
	return -1
}

// reg numbers the registers the function names, for the model.
func (p *fn) reg(name string) fprule.Reg {
	switch name {
	case "":
		return fprule.NoReg
	case p.r.sp, "SP":
		return fprule.SP
	}
	n, ok := p.regNum[name]
	if !ok {
		if len(p.regNum) >= int(fprule.SP) {
			return fprule.NoReg
		}
		n = fprule.Reg(len(p.regNum))
		p.regNum[name] = n
	}
	return n
}

// walk explores every path from the entry, calling visit for each
// instruction with the state before it. visit returns the state after it.
// The entry state knows the caller's frame pointer is saved in a function
// with a frame: the assembler's prologue saves it.
func (p *fn) walk(visit func(i int, s fprule.State) fprule.State) {
	type item struct {
		i int
		s fprule.State
	}
	seen := map[item]bool{}
	start := fprule.Entry(p.reg(p.r.fp), !p.f.frameless())
	work := []item{{0, start}}
	for len(work) > 0 {
		it := work[len(work)-1]
		work = work[:len(work)-1]
		for it.i >= 0 && it.i < len(p.cls) && !seen[it] {
			seen[it] = true
			s := visit(it.i, it.s)
			c := &p.cls[it.i]
			switch c.kind {
			case kCondJump:
				work = append(work, item{p.jumpTarget(it.i), s})
			case kJump:
				it = item{p.jumpTarget(it.i), s}
				continue
			case kTail, kIndirect, kRet, kTrap:
				it.i = -1
				continue
			}
			if c.noReturn {
				it.i = -1
				continue
			}
			it = item{it.i + 1, s}
		}
	}
}

// apply updates s for the effects of instruction i.
func (p *fn) apply(i int, s fprule.State) (fprule.State, fprule.Events) {
	c, in := &p.cls[i], p.f.insts[i]
	return s.Apply(fprule.Effect{
		FP: c.fp, FPSrc: p.reg(c.fpSrc), FPSave: c.fpSave,
		SP: c.sp, SPSrc: p.reg(c.spSrc),
		Def: p.reg(c.def), DefSrc: p.reg(c.defSrc), DefOffset: c.defOffset,
		// On arm64 the clone system call itself puts the child on the new stack.
		NewThread: p.r.fp == "R29" && p.f.name == "runtime.clone" && in.op == "SVC",
		Link:      in.linkNote,
	})
}

func isCall(c *classified) bool { return c.kind == kCall }

func calleeName(t string, f *asmFunc) string {
	t = strings.TrimSuffix(t, "(SB)")
	if strings.HasPrefix(t, "·") {
		pkg := f.name
		if i := strings.LastIndex(pkg, "."); i >= 0 {
			pkg = pkg[:i]
		}
		t = pkg + t
	}
	if i := strings.Index(t, "<"); i >= 0 {
		t = t[:i]
	}
	return strings.ReplaceAll(t, "·", ".")
}

// checkTopframe applies the root rule: a TOPFRAME function, or one entered
// from C, must clear or deliberately set the frame pointer before its first
// call; one entered from C must save it first.
func checkTopframe(f *asmFunc, r *archRegs) []finding {
	_, cabi := fpchain.CEntries[f.name]
	if !f.topframe && !cabi || f.linkNote {
		return nil
	}
	p := prepare(f, r)
	seen := map[string]bool{}
	var out []finding
	add := func(i int, msg string) {
		k := fmt.Sprint(i, msg)
		if !seen[k] {
			seen[k] = true
			out = append(out, finding{f.insts[i].line, msg})
		}
	}
	what := "TOPFRAME function"
	if cabi {
		what = "C-ABI entry"
	}
	fnc := fprule.Function{Root: true}
	p.walk(func(i int, s fprule.State) fprule.State {
		s, ev := p.apply(i, s)
		if cabi && ev.UnsavedWrite {
			add(i, fmt.Sprintf("%s %s changes the frame pointer before saving it (it is callee-saved in the C ABI)", what, f.name))
		}
		c := &p.cls[i]
		if isCall(c) {
			exempt := fpchain.RootCallees[calleeName(c.target, f)] || f.insts[i].linkNote
			var v fprule.Verdict
			s, v = s.Call(fnc, fprule.Call{Returns: true, Exempt: exempt})
			if v.Root {
				add(i, fmt.Sprintf("%s %s calls %s with the caller's frame pointer live: clear it (or link it deliberately) before the call", what, f.name, c.target))
			}
		}
		return s
	})
	return out
}

// checkStackSwitch reports calls made on a new stack while the frame pointer
// still points into the old one.
func checkStackSwitch(f *asmFunc, r *archRegs) []finding {
	if _, ok := fpchain.Links[f.name]; ok || f.linkNote {
		return nil
	}
	p := prepare(f, r)
	seen := map[int]bool{}
	var out []finding
	p.walk(func(i int, s fprule.State) fprule.State {
		s, _ = p.apply(i, s)
		c := &p.cls[i]
		if isCall(c) || c.kind == kTail || c.kind == kIndirect {
			exempt := fpchain.RootCallees[calleeName(c.target, f)] || f.insts[i].linkNote
			var v fprule.Verdict
			s, v = s.Call(fprule.Function{}, fprule.Call{Returns: isCall(c), Exempt: exempt})
			if v.Switch && !seen[i] {
				seen[i] = true
				out = append(out, finding{f.insts[i].line, fmt.Sprintf("%s switches stacks and then calls %s with the frame pointer still pointing into the old stack: clear it, or link it deliberately (annotate with // %s and say why)", f.name, c.target, LinkAnnotation)})
			}
		}
		return s
	})
	return out
}

// checkClobber is x/tools' framepointer check, also applied in package
// runtime: in a function without a frame record, the first write of the
// frame pointer before any read of it (and before any unconditional branch)
// clobbers the caller's value. A clear or deliberate link from which no
// return (RET or tail jump) is reachable is a context switch, not a clobber.
func checkClobber(f *asmFunc, r *archRegs) []finding {
	if !f.frameless() {
		return nil
	}
	p := prepare(f, r)
	for i := range p.cls {
		c := &p.cls[i]
		if c.fp != eNone {
			if c.savedCtx {
				// Restoring a frame pointer saved in a gobuf or g.syscallbp.
				return nil
			}
			if (c.fp == eClear || c.fp == eLoad || c.fp == eFromReg) && !p.returnReachable(i) {
				return nil
			}
			if c.fp == eClear && f.topframe {
				// A TOPFRAME function has no caller frame to preserve.
				return nil
			}
			return []finding{{f.insts[i].line, "frame pointer is clobbered before saving"}}
		}
		if c.fpRead || c.kind == kJump || c.kind == kTail || c.kind == kIndirect || c.kind == kRet {
			return nil
		}
	}
	return nil
}

func (p *fn) returnReachable(from int) bool {
	seen := map[int]bool{}
	work := []int{from}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		for i >= 0 && i < len(p.cls) && !seen[i] {
			seen[i] = true
			c := &p.cls[i]
			if i != from && c.fp == eRestore {
				break // the caller's value is back
			}
			if c.noReturn {
				i = -1
				continue
			}
			switch c.kind {
			case kRet, kTail:
				return true
			case kIndirect, kTrap:
				i = -1
				continue
			case kJump:
				i = p.jumpTarget(i)
				continue
			case kCondJump:
				work = append(work, p.jumpTarget(i))
			}
			i++
		}
	}
	return false
}
