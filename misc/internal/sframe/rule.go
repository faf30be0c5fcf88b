package sframe

import "fmt"

// DWARF register numbers of the stack and frame pointers, which flexible
// FDEs name and Rule.CFA.Reg reports.
const (
	AMD64RegFP   = 6
	AMD64RegSP   = 7
	AArch64RegFP = 29
	AArch64RegSP = 31
)

// A Where says how a value is recovered.
type Where uint8

const (
	// Untracked: the section says nothing. For the FP, the register still
	// holds the caller's value; for the RA on AArch64, the link register
	// holds it.
	Untracked Where = iota
	// AtCFA: saved in memory at CFA+Offset.
	AtCFA
	// FromReg: the value is register Reg plus Offset, or, with Deref, the
	// word stored there.
	FromReg
)

// A Loc is where one value is recovered from.
type Loc struct {
	Where  Where
	Reg    int // DWARF register number, for FromReg
	Offset int32
	Deref  bool
}

func (l Loc) String() string {
	switch l.Where {
	case AtCFA:
		return fmt.Sprintf("CFA%+d", l.Offset)
	case FromReg:
		s := fmt.Sprintf("r%d%+d", l.Reg, l.Offset)
		if l.Deref {
			s = "(" + s + ")"
		}
		return s
	}
	return "untracked"
}

// A Rule is how to unwind one frame at one PC.
type Rule struct {
	// Outermost: the return address is undefined; the frame is the last.
	Outermost bool
	// Signal: the function is a signal trampoline (its FDE's signal bit).
	Signal bool
	// MangledRA: the return address is signed (AArch64 pointer
	// authentication).
	MangledRA bool
	// CFA is always FromReg (unless Outermost); RA and FP may be any.
	CFA, RA, FP Loc
}

func (r Rule) String() string {
	s := ""
	if r.Signal {
		s = "signal "
	}
	if r.Outermost {
		return s + "outermost (RA undefined)"
	}
	return fmt.Sprintf("%sCFA=%v RA=%v FP=%v", s, r.CFA, r.RA, r.FP)
}

// SPReg and FPReg are the DWARF numbers of the section's ABI's stack and
// frame pointers.
func (s *Section) SPReg() int {
	if s.ABI == ABIAMD64LE {
		return AMD64RegSP
	}
	return AArch64RegSP
}

func (s *Section) FPReg() int {
	if s.ABI == ABIAMD64LE {
		return AMD64RegFP
	}
	return AArch64RegFP
}

// RuleAt returns the rule the section gives at pc. It wraps ErrNoFDE or
// ErrNoFRE where the section has none, ErrCorrupt where a flexible FRE's
// words make no rule.
func (s *Section) RuleAt(pc uint64) (Rule, error) {
	f := s.Lookup(pc)
	if f == nil {
		return Rule{}, fmt.Errorf("%#x: %w", pc, ErrNoFDE)
	}
	r := f.FREAt(pc)
	if r == nil {
		return Rule{}, fmt.Errorf("%#x: %w", pc, ErrNoFRE)
	}
	return s.rule(f, r)
}

func (s *Section) rule(f *FDE, r *FRE) (Rule, error) {
	rule := Rule{Signal: f.Signal(), MangledRA: r.MangledRA()}
	w := r.Words
	if len(w) == 0 {
		rule.Outermost = true
		return rule, nil
	}
	fixed := func(off int8) Loc {
		if off == 0 {
			return Loc{}
		}
		return Loc{Where: AtCFA, Offset: int32(off)}
	}
	rule.RA, rule.FP = fixed(s.FixedRAOffset), fixed(s.FixedFPOffset)
	if f.Type() == FDETypeFlex {
		return s.flexRule(rule, w)
	}
	base := s.SPReg()
	if r.Base() == BaseFP {
		base = s.FPReg()
	}
	rule.CFA = Loc{Where: FromReg, Reg: base, Offset: w[0]}
	switch s.ABI {
	case ABIAMD64LE:
		if len(w) >= 2 {
			rule.FP = Loc{Where: AtCFA, Offset: w[1]}
		}
	default:
		if len(w) >= 2 {
			rule.RA = Loc{Where: AtCFA, Offset: w[1]}
		}
		if len(w) >= 3 {
			rule.FP = Loc{Where: AtCFA, Offset: w[2]}
		}
	}
	return rule, nil
}

// flexRule reads a flexible FRE's words: a control word and an offset for
// the CFA, then for the RA and the FP either a zero control word (not
// tracked) or a control word and an offset. A control word holds the
// register number above bit 3, dereference in bit 1, "register-based" in
// bit 0; an RA or FP that is not register-based is saved at CFA+offset.
func (s *Section) flexRule(rule Rule, w []int32) (Rule, error) {
	loc := func(ctl, off int32) Loc {
		if ctl&1 == 0 {
			return Loc{Where: AtCFA, Offset: off}
		}
		return Loc{Where: FromReg, Reg: int(uint32(ctl) >> 3), Offset: off, Deref: ctl&2 != 0}
	}
	if w[0]&1 == 0 {
		return Rule{}, fmt.Errorf("%w: flexible FRE's CFA control word %#x names no register", ErrCorrupt, w[0])
	}
	rule.CFA = loc(w[0], w[1])
	i := 2
	for _, dst := range []*Loc{&rule.RA, &rule.FP} {
		if i >= len(w) {
			break
		}
		if w[i] == 0 {
			i++
			continue
		}
		if i+1 >= len(w) {
			return Rule{}, fmt.Errorf("%w: flexible FRE's control word %#x has no offset", ErrCorrupt, w[i])
		}
		*dst = loc(w[i], w[i+1])
		i += 2
	}
	if i != len(w) {
		return Rule{}, fmt.Errorf("%w: flexible FRE has %d data words left over", ErrCorrupt, len(w)-i)
	}
	return rule, nil
}
