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
	caller, err = s.StepRule(regs, rule, read)
	return caller, rule, err
}

// StepRule is Step with the rule of the frame's PC looked up already (by
// RuleAt): an unwinder that caches rules by PC steps without a lookup.
func (s *Section) StepRule(regs Regs, rule Rule, read func(addr uint64) (uint64, error)) (caller Regs, err error) {
	if rule.Outermost {
		return regs, nil
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
		return regs, err
	}
	ra, err := value("RA", rule.RA, cfa, regs.LR)
	if err != nil {
		return regs, err
	}
	fp, err := value("FP", rule.FP, cfa, regs.FP)
	if err != nil {
		return regs, err
	}
	return Regs{PC: ra, SP: cfa, FP: fp}, nil
}

// Unwind walks the stack from regs with the section alone and returns the
// PCs of the frames, innermost first: regs.PC, then return addresses. It
// stops at an outermost frame, after max frames, at an SP-based CFA that
// does not climb, or at the first error, which it returns with the frames
// found so far; a PC no FDE covers ends the walk with an error wrapping
// ErrNoFDE. At a signal frame (the handler entry, or the signal-return
// trampoline) the interrupted registers are the kernel's to describe:
// signal, if not nil, is given the frame's registers and its CFA (0 if the
// rule is outermost and gives none), finds the kernel's signal frame (at
// the CFA in a handler, at SP in the return trampoline) and returns the
// registers saved there, and the walk goes on from the interrupted PC;
// without it, or if it returns false, the walk stops.
func (s *Section) Unwind(regs Regs, read func(addr uint64) (uint64, error), max int, signal func(frame Regs, cfa uint64) (Regs, bool)) ([]uint64, error) {
	pcs := []uint64{regs.PC}
	lookup := regs.PC
	for len(pcs) < max {
		caller, rule, err := s.Step(regs, lookup, read)
		if err != nil {
			return pcs, err
		}
		if rule.Signal {
			cfa := uint64(0)
			if !rule.Outermost {
				cfa = caller.SP
			}
			if signal == nil {
				return pcs, nil
			}
			interrupted, ok := signal(regs, cfa)
			if !ok {
				return pcs, nil
			}
			regs, lookup = interrupted, interrupted.PC // not a return address
			pcs = append(pcs, regs.PC)
			continue
		}
		if rule.Outermost {
			return pcs, nil
		}
		// A CFA from the stack pointer is above it, except in an AArch64
		// leaf that has not allocated a frame (its return address in LR).
		// One from the frame pointer may be anywhere: a frame record that
		// links to another stack is how Go's stack switches (systemstack,
		// cgo callbacks) describe the caller.
		leaf := s.ABI != ABIAMD64LE && len(pcs) == 1
		viaFP := rule.CFA.Where == FromReg && rule.CFA.Reg == s.FPReg()
		if !viaFP && (caller.SP < regs.SP || caller.SP == regs.SP && !leaf) {
			return pcs, fmt.Errorf("%w: the CFA %#x at %#x is not above SP %#x", ErrUnwind, caller.SP, regs.PC, regs.SP)
		}
		regs, lookup = caller, caller.PC-1
		pcs = append(pcs, regs.PC)
	}
	return pcs, nil
}
