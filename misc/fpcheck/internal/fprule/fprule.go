// Package fprule is the one model of the frame-pointer rules that fpcheck
// checks, in assembly source and in machine code alike. A front end (the
// assembly-text classifier in fpcheck/internal/asmfp, the amd64 and arm64
// decoders in fpcheck/internal/bincheck) reduces each instruction to an
// Effect; the model follows every path of the function with a State and
// says, at each call, whether a rule is broken:
//
//   - root: a TOPFRAME function, or one entered from C or the kernel, calls
//     before clearing the frame pointer or setting it to a deliberate link;
//   - C ABI: a function entered from C changes the frame pointer, which is
//     callee-saved there, before saving it;
//   - stack switch: after SP is loaded from memory or from a register not
//     derived from SP, a call on the new stack comes before a write of the
//     frame pointer, in a function that is not a documented link.
//
// The assembler's own check (cmd/internal/obj/fpcheck.go, which cannot
// import this module) classifies instructions with a coarser enum of the
// same meaning: its FPKeep, FPWrite and FPRestore are what FPEffect.Obj
// returns for each effect here.
package fprule

// An FPEffect is what an instruction does to the frame-pointer register.
type FPEffect uint8

const (
	FPNone    FPEffect = iota // leaves it unchanged (obj: FPKeep)
	FPClear                   // sets it to zero: the chain ends here (obj: FPWrite)
	FPFromSP                  // sets it from SP, a frame setup: the chain continues into the saved value (obj: FPKeep)
	FPFromReg                 // copies another register: a setup if that holds an SP-derived value, else a deliberate write (obj: FPKeep or FPWrite)
	FPRestore                 // reloads it from the stack, where the incoming value is saved (obj: FPRestore)
	FPLoad                    // loads it from elsewhere: a deliberate link such as gobuf.bp (obj: FPWrite)
	FPOther                   // any other computation (obj: FPWrite)
)

// ObjEffect names cmd/internal/obj's FPEffect values.
type ObjEffect string

const (
	ObjKeep    ObjEffect = "FPKeep"
	ObjWrite   ObjEffect = "FPWrite"
	ObjRestore ObjEffect = "FPRestore"
)

// Obj returns the assembler check's class of e; srcDerived says, for
// FPFromReg, whether the source register holds an SP-derived value.
func (e FPEffect) Obj(srcDerived bool) ObjEffect {
	switch e {
	case FPClear, FPLoad, FPOther:
		return ObjWrite
	case FPFromReg:
		if srcDerived {
			return ObjKeep
		}
		return ObjWrite
	case FPRestore:
		return ObjRestore
	}
	return ObjKeep
}

// An SPEffect is what an instruction does to the stack pointer.
type SPEffect uint8

const (
	SPNone    SPEffect = iota
	SPAdjust           // arithmetic on SP, or a copy from an SP-derived register
	SPFromReg          // copy from a register: a switch unless it is SP-derived
	SPSwitch           // load from memory: a stack switch
)

// A Reg is a register number the front end assigns, below 63, or one of
// NoReg and SP.
type Reg int8

const (
	NoReg Reg = -1
	SP    Reg = 63
)

// An Effect is one instruction, reduced to what the rules need.
type Effect struct {
	FP     FPEffect
	FPSrc  Reg  // for FPFromReg
	FPSave bool // stores the frame pointer to memory (saves it)

	SP    SPEffect
	SPSrc Reg // for SPFromReg

	// Def is the general register written (NoReg for none), DefSrc the
	// register it is a copy of, or a copy plus a constant (NoReg if it is
	// loaded or computed otherwise). DefOffset: Def is moved by adding
	// another register, so it still points into the same memory.
	Def, DefSrc Reg
	DefOffset   bool

	// NewThread: the instruction starts a thread that continues on a new
	// stack (arm64's clone system call).
	NewThread bool
	// Link: the instruction is annotated as a deliberate link; a stack
	// switch there counts as a write of the frame pointer.
	Link bool
}

// State is what the rules know on one path at one instruction. It is
// comparable, so a walker can use it to visit each (instruction, state)
// once.
type State struct {
	fp       Reg    // the frame-pointer register
	handled  bool   // frame pointer cleared or deliberately set since entry
	called   bool   // a call has been made on this path (root rule checked)
	saved    bool   // frame pointer saved to memory since entry
	switched bool   // running on a stack switched to in this function
	fpNew    bool   // frame pointer written since the switch
	spd      uint64 // registers holding values derived from SP
	// fpBase is the register the frame pointer was last computed from
	// while it still holds a pointer into the same memory (NoReg for
	// none): a switch to a stack computed from it keeps the frame pointer
	// valid (the fork's amd64 cgocallback).
	fpBase Reg
}

// Entry is the state at a function's entry, whose frame-pointer register
// is fp. saved says the caller's frame pointer is already saved (the
// assembler's prologue, which assembly source does not show).
func Entry(fp Reg, saved bool) State {
	s := State{fp: fp, saved: saved, fpBase: NoReg}
	s.set(fp, true)
	return s
}

func (s *State) set(r Reg, v bool) {
	if r < 0 || r >= SP {
		return
	}
	if v {
		s.spd |= 1 << uint(r)
	} else {
		s.spd &^= 1 << uint(r)
	}
}

// Derived reports whether r holds an SP-derived value.
func (s State) Derived(r Reg) bool {
	return r == SP || r >= 0 && r < SP && s.spd&(1<<uint(r)) != 0
}

// Saved reports whether the frame pointer has been saved on this path.
func (s State) Saved() bool { return s.saved }

// Events says what applying an effect did.
type Events struct {
	// Deliberate: the frame pointer was cleared or deliberately set.
	Deliberate bool
	// UnsavedWrite: it was, before it had been saved (a C-ABI violation
	// in a function entered from C).
	UnsavedWrite bool
	// Switched: the instruction switched stacks.
	Switched bool
}

// Apply updates s for e.
func (s State) Apply(e Effect) (State, Events) {
	var ev Events
	if e.FPSave {
		s.saved = true
	}
	deliberate := func() {
		ev.Deliberate = true
		ev.UnsavedWrite = !s.saved
		s.handled, s.fpNew = true, true
	}
	if e.FP != FPNone {
		s.fpBase = NoReg
	}
	switch e.FP {
	case FPClear, FPLoad, FPOther:
		deliberate()
		s.set(s.fp, false)
	case FPFromSP:
		// On a switched-to stack this points the frame pointer into it.
		s.set(s.fp, true)
		s.fpNew = true
	case FPFromReg:
		if s.Derived(e.FPSrc) {
			s.set(s.fp, true)
			s.fpNew = true
		} else {
			deliberate()
			s.set(s.fp, false)
			s.fpBase = e.FPSrc
		}
	case FPRestore:
		s.handled, s.fpNew = false, false
		s.set(s.fp, true)
	}
	// A switch away from the entry stack makes the frame pointer stale
	// until it is written again; a second switch is taken to return to the
	// entry stack (the switch, call, switch back shape of the runtime). A
	// frame pointer computed, before the switch, from the register the new
	// SP comes from already points into the new stack.
	switch {
	case e.NewThread:
		if !s.switched {
			ev.Switched = true
			s.switched, s.fpNew, s.spd = true, false, 0
		}
	case e.SP == SPSwitch || e.SP == SPFromReg && !s.Derived(e.SPSrc):
		ev.Switched = true
		s.switched = !s.switched
		s.fpNew = e.Link || e.SP == SPFromReg && s.fpBase != NoReg && e.SPSrc == s.fpBase
		s.spd = 0
		if s.fpNew {
			s.set(s.fp, true)
		}
	}
	if e.Def != NoReg {
		s.set(e.Def, e.DefSrc != NoReg && s.Derived(e.DefSrc))
		if e.Def == s.fpBase && e.DefSrc != e.Def && !e.DefOffset {
			s.fpBase = NoReg
		}
	}
	return s, ev
}

// A Call is a call, or a jump that leaves the function, as the rules see it.
type Call struct {
	// Returns: a call that returns here, not a jump that leaves.
	Returns bool
	// Exempt: the callee sets its own root (morestack), stores no frame
	// pointer (arm64's load_g), or the call is annotated as a link.
	Exempt bool
}

// Verdict says which rules a call breaks.
type Verdict struct {
	// Root: a root function's first call, with the caller's frame pointer
	// live (not cleared or linked since entry).
	Root bool
	// Switch: a call on a new stack with the frame pointer still pointing
	// into the old one.
	Switch bool
}

// Function says which rules apply to a function.
type Function struct {
	Root bool // TOPFRAME, or entered from C or the kernel
	Link bool // a documented link: its new-stack frames link to the old stack on purpose
}

// Call judges c at state s in function f and returns the state after it.
// A tail jump leaves no frame of this function behind: the target runs as
// if entered directly, and is checked itself if it is a root.
func (s State) Call(f Function, c Call) (State, Verdict) {
	var v Verdict
	if !c.Exempt {
		v.Root = f.Root && c.Returns && !s.handled && !s.called
		v.Switch = s.switched && !s.fpNew && !f.Link
	}
	if c.Returns {
		s.called = true
	}
	return s, v
}

// A LeafStep is what StoresNoFrame needs to know of one instruction.
type LeafStep struct {
	SavesFP bool // stores the frame pointer to memory
	Calls   bool // calls, or jumps through a register
	Leaves  bool // jumps out of the function (a tail call)
}

// StoresNoFrame reports whether a function made of steps, with no frame
// record of its own, never stores the frame pointer, calls, or leaves but
// by returning (arm64's load_g and save_g). Calling such a leaf with any
// frame pointer leaves no frame record for an unwinder to follow, so the
// machine-code checker, which can read the callee, exempts the call
// (Call.Exempt). The source checker and the assembler's rule see one
// function at a time and do not: there the call is reported.
func StoresNoFrame(steps []LeafStep) bool {
	for _, s := range steps {
		if s.SavesFP || s.Calls || s.Leaves {
			return false
		}
	}
	return true
}
