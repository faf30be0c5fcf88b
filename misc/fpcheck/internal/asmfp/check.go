package asmfp

import (
	"fmt"
	"strconv"
	"strings"

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
	regBit map[string]uint
}

func prepare(f *asmFunc, r *archRegs) *fn {
	p := &fn{f: f, r: r, labels: map[string]int{}, regBit: map[string]uint{}}
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

func (p *fn) bit(reg string) uint64 {
	if reg == "" {
		return 0
	}
	b, ok := p.regBit[reg]
	if !ok {
		if len(p.regBit) >= 62 {
			return 0
		}
		b = uint(len(p.regBit))
		p.regBit[reg] = b
	}
	return 1 << b
}

type pstate struct {
	handled, called, saved, switched, fpNew bool
	spd                                     uint64
}

// walk explores every path from the entry, calling visit for each
// instruction with the state before it. visit returns the state after it.
func (p *fn) walk(visit func(i int, s pstate) pstate) {
	type item struct {
		i int
		s pstate
	}
	seen := map[item]bool{}
	start := pstate{spd: p.bit(p.r.fp) | p.bit(p.r.sp) | p.bit("SP")}
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

func (p *fn) derived(s pstate, reg string) bool {
	return reg == p.r.sp || reg == "SP" || s.spd&p.bit(reg) != 0
}

// apply updates s for the data effects of instruction i, calling onChange
// for deliberate writes of the frame pointer (for the C ABI check).
func (p *fn) apply(i int, s pstate, onChange func(pstate)) pstate {
	c := &p.cls[i]
	if c.fpSave {
		s.saved = true
	}
	deliberate := func() {
		if onChange != nil {
			onChange(s)
		}
		s.handled, s.fpNew = true, true
	}
	fpb := p.bit(p.r.fp)
	switch c.fp {
	case eClear, eLoad, eOther:
		deliberate()
		s.spd &^= fpb
	case eFromSP:
		s.spd |= fpb
	case eFromReg:
		if p.derived(s, c.fpSrc) {
			s.spd |= fpb
		} else {
			deliberate()
			s.spd &^= fpb
		}
	case eRestore:
		s.handled, s.fpNew = false, false
		s.spd |= fpb
	}
	// On arm64 the clone system call itself puts the child on the new stack.
	if p.r.fp == "R29" && p.f.name == "runtime.clone" && p.f.insts[i].op == "SVC" {
		s.switched, s.fpNew = true, false
	} else if c.sp == sSwitch || c.sp == sFromReg && !p.derived(s, c.spSrc) {
		s.switched, s.fpNew = !s.switched, false
		if p.f.insts[i].linkNote {
			s.fpNew = true
		}
		s.spd = p.bit(p.r.sp) | p.bit("SP")
	}
	if c.def != "" {
		if c.defSrc != "" && p.derived(s, c.defSrc) {
			s.spd |= p.bit(c.def)
		} else {
			s.spd &^= p.bit(c.def)
		}
	}
	return s
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
	p.walk(func(i int, s pstate) pstate {
		// An assembler prologue saves the caller's frame pointer in framed functions.
		if i == 0 && !f.frameless() {
			s.saved = true
		}
		s = p.apply(i, s, func(s pstate) {
			if cabi && !s.saved {
				add(i, fmt.Sprintf("%s %s changes the frame pointer before saving it (it is callee-saved in the C ABI)", what, f.name))
			}
		})
		c := &p.cls[i]
		if isCall(c) && !s.called {
			s.called = true
			if !s.handled && !fpchain.RootCallees[calleeName(c.target, f)] && !f.insts[i].linkNote {
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
	p.walk(func(i int, s pstate) pstate {
		s = p.apply(i, s, nil)
		c := &p.cls[i]
		if (isCall(c) || c.kind == kTail || c.kind == kIndirect) && s.switched && !s.fpNew && !f.insts[i].linkNote && !seen[i] {
			if !fpchain.RootCallees[calleeName(c.target, f)] {
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
