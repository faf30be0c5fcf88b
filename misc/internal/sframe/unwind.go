package sframe

import (
	"errors"
	"fmt"
)

// Regs are the registers an SFrame unwinder reads and recovers: the PC,
// the stack and frame pointers, and on AArch64 the link register.
type Regs struct {
	PC, SP, FP, LR uint64
}

// ErrUnwind is wrapped by Step's errors: a rule names a register the
// unwinder does not track, or memory it needs cannot be read.
var ErrUnwind = errors.New("SFrame unwind failed")

// Step unwinds one frame: given the registers at a PC the section covers,
// it returns the caller's (PC the return address, SP the CFA, FP restored
// or unchanged; LR unknown, 0). outermost reports a frame whose return
// address is undefined: regs are returned as they are. read loads the
// 8-byte word at an address. A caller's PC is a return address: look its
// rule up at PC-1 (the call), as Unwind does.
func (s *Section) Step(regs Regs, lookup uint64, read func(addr uint64) (uint64, error)) (caller Regs, rule Rule, err error) {
	rule, err = s.RuleAt(lookup)
	if err != nil {
		return regs, rule, err
	}
	if rule.Outermost {
		return regs, rule, nil
	}
	reg := func(n int) (uint64, bool) {
		switch {
		case n == s.SPReg():
			return regs.SP, true
		case n == s.FPReg():
			return regs.FP, true
		case s.ABI != ABIAMD64LE && n == 30:
			return regs.LR, true
		}
		return 0, false
	}
	value := func(what string, l Loc, cfa uint64, unchanged uint64) (uint64, error) {
		switch l.Where {
		case Untracked:
			return unchanged, nil
		case AtCFA:
			v, err := read(cfa + uint64(int64(l.Offset)))
			if err != nil {
				return 0, fmt.Errorf("%w: %s at CFA%+d: %v", ErrUnwind, what, l.Offset, err)
			}
			return v, nil
		}
		base, ok := reg(l.Reg)
		if !ok {
			return 0, fmt.Errorf("%w: %s from register %d, which is not tracked", ErrUnwind, what, l.Reg)
		}
		v := base + uint64(int64(l.Offset))
		if l.Deref {
			w, err := read(v)
			if err != nil {
				return 0, fmt.Errorf("%w: %s at %v: %v", ErrUnwind, what, l, err)
			}
			v = w
		}
		return v, nil
	}
	cfa, err := value("CFA", rule.CFA, 0, 0)
	if err != nil {
		return regs, rule, err
	}
	ra, err := value("RA", rule.RA, cfa, regs.LR)
	if err != nil {
		return regs, rule, err
	}
	fp, err := value("FP", rule.FP, cfa, regs.FP)
	if err != nil {
		return regs, rule, err
	}
	return Regs{PC: ra, SP: cfa, FP: fp}, rule, nil
}

// Unwind walks the stack from regs with the section alone and returns the
// PCs of the frames, innermost first: regs.PC, then return addresses. It
// stops at an outermost frame, at a signal frame (the interrupted context
// is the kernel's to describe), after max frames, or at the first error,
// which it returns with the frames found so far; a PC no FDE covers ends
// the walk with an error wrapping ErrNoFDE.
func (s *Section) Unwind(regs Regs, read func(addr uint64) (uint64, error), max int) ([]uint64, error) {
	pcs := []uint64{regs.PC}
	lookup := regs.PC
	for len(pcs) < max {
		caller, rule, err := s.Step(regs, lookup, read)
		if err != nil {
			return pcs, err
		}
		if rule.Outermost || rule.Signal {
			return pcs, nil
		}
		// Each frame's CFA is above its SP, except in an AArch64 leaf that
		// has not allocated a frame (its return address in LR).
		leaf := s.ABI != ABIAMD64LE && len(pcs) == 1
		if caller.SP < regs.SP || caller.SP == regs.SP && !leaf {
			return pcs, fmt.Errorf("%w: the CFA %#x at %#x is not above SP %#x", ErrUnwind, caller.SP, regs.PC, regs.SP)
		}
		regs, lookup = caller, caller.PC-1
		pcs = append(pcs, regs.PC)
	}
	return pcs, nil
}
