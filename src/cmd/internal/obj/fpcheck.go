// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package obj

import "internal/abi"

// Frame pointers at the outermost frame.
//
// A TOPFRAME function is the outermost frame of its stack: the runtime's
// unwinder stops there because of the flag. Frame-pointer unwinders (the
// runtime's tracer and profilers, perf, eBPF profilers) cannot see the
// flag; they follow saved frame pointers until they find zero. If a
// TOPFRAME function calls while the frame pointer it was entered with is
// still in the register, every walk from the callee continues past the top
// frame into whatever that value points at: C frames without frame
// pointers, a kernel signal frame, or garbage.
//
// CheckTopFrameFP enforces the rule on architectures that keep frame
// pointers: along every path from the entry of a TOPFRAME function to a
// call, an instruction of the function must have written the frame-pointer
// register, either clearing it (the chain ends here) or loading a frame the
// function links to on purpose. Otherwise it reports
//
//	file:line: TOPFRAME function F calls with the caller's frame pointer live
//
// at each such call. The assembler does not insert the clearing
// instruction itself: where the frame pointer must be cleared depends on
// the entry's ABI (for a C-ABI entry it is callee-saved and must be saved
// first), which only the author knows.
//
// The frame record the assembler inserts for a function with a frame does
// not count as a write. It saves the incoming frame pointer in the frame
// and points the register at that slot, so a walk from the callee reaches
// the caller's frames one step later; the value is still live.
//
// A reload of the frame pointer from the stack (a pop, or a load relative
// to the stack or frame pointer) counts as a restore of the incoming value,
// since that is what such code does in practice. The check follows the
// register only, not copies of its value in other registers.
//
// A function that handles its frame pointer in a way the check cannot
// follow is marked NOFPCHECK; its comment must say why that is safe.

// An FPEffect is what an instruction does to the frame-pointer register,
// as far as CheckTopFrameFP is concerned.
type FPEffect uint8

const (
	FPKeep    FPEffect = iota // leaves it unchanged or derives it from its old value
	FPWrite                   // sets it to a value not derived from the incoming one
	FPRestore                 // reloads it from the stack, where the incoming one may be saved
)

// CheckTopFrameFP reports every call in s that, on some path from the
// entry, runs with the frame pointer s was entered with. effect classifies
// an instruction's effect on the frame-pointer register. It must run after
// branches are resolved (linkpatch) and before the prologue is inserted.
func CheckTopFrameFP(ctxt *Link, s *LSym, effect func(*Prog) FPEffect) {
	fn := s.Func()
	if fn == nil || fn.Text == nil || fn.FuncFlag&abi.FuncFlagTopFrame == 0 || s.NoFPCheck() {
		return
	}
	entry := fn.Text.Link

	// Instructions reachable at all; a reachable restore makes the
	// incoming value live again whatever the state before it.
	reached := make(map[*Prog]bool)
	var work []*Prog
	push := func(set map[*Prog]bool, p *Prog) {
		if p != nil && !set[p] {
			set[p] = true
			work = append(work, p)
		}
	}
	push(reached, entry)
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		forEachSucc(p, func(q *Prog) { push(reached, q) })
	}

	// live[p]: p may run with the incoming frame pointer in the register.
	live := make(map[*Prog]bool)
	push(live, entry)
	for p := entry; p != nil; p = p.Link {
		if reached[p] && effect(p) == FPRestore {
			forEachSucc(p, func(q *Prog) { push(live, q) })
		}
	}
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		if effect(p) == FPWrite {
			continue
		}
		forEachSucc(p, func(q *Prog) { push(live, q) })
	}

	for p := entry; p != nil; p = p.Link {
		if live[p] && isCall(p) {
			pos := ctxt.PosTable.Pos(p.Pos)
			ctxt.Diag("%s:%d: TOPFRAME function %s calls with the caller's frame pointer live", pos.Filename(), pos.Line(), s.Name)
		}
	}
}

func isCall(p *Prog) bool {
	return p.As == ACALL || p.As == ADUFFZERO || p.As == ADUFFCOPY
}

// forEachSucc calls f for each instruction that may run after p within
// its function. Calls are assumed to return.
func forEachSucc(p *Prog, f func(*Prog)) {
	if p.To.Type == TYPE_BRANCH && !isCall(p) {
		if q := p.To.Target(); q != nil {
			f(q)
		}
	}
	switch p.As {
	case AJMP, ARET, AUNDEF:
		return
	}
	if p.Link != nil {
		f(p.Link)
	}
}
