package bincheck

// An insn is one decoded instruction, reduced to what the frame-pointer
// analysis needs. Decoders for each architecture fill it in.
type insn struct {
	pc   uint64
	size int
	text string

	flow   flow
	target uint64 // direct branch or call target

	fp    fpEffect // effect on the frame-pointer register
	fpSrc int      // for fpFromReg: source register
	fpSt  bool     // stores the frame pointer to memory (saves it)

	sp    spEffect // effect on the stack pointer
	spSrc int      // for spFromReg: source register

	// def is the general register this instruction writes (-1 for none), and
	// defSrc the register it is computed from by a move or arithmetic with an
	// immediate (-1 if it is loaded or computed otherwise; regSP for SP).
	def, defSrc int
	// defOffset says def is changed by adding or subtracting another
	// register: a pointer moved within the memory it points into.
	defOffset bool
}

type flow uint8

const (
	flowNext     flow = iota
	flowCall          // direct or indirect call; returns to the next instruction
	flowJump          // unconditional direct jump
	flowCondJump      // conditional direct jump
	flowIndirect      // indirect jump: leaves the function
	flowRet
	flowTrap // does not continue (UD2, INT3, BRK)
)

type fpEffect uint8

const (
	fpNone    fpEffect = iota
	fpClear            // set to zero
	fpFromSP           // set from SP (frame setup): the chain still continues into the saved value
	fpFromReg          // set from another register (classified by the state)
	fpRestore          // loaded from the current stack (an epilogue restoring the caller's value)
	fpLoad             // loaded from elsewhere (a deliberate link, e.g. gobuf.bp)
	fpOther            // any other computation
)

type spEffect uint8

const (
	spNone    spEffect = iota
	spAdjust           // arithmetic on SP, or a copy from an SP-derived register
	spFromReg          // copy from a register (a switch unless it is SP-derived)
	spSwitch           // load from memory: a stack switch
)

const regSP = 100 // pseudo register number for the stack pointer
