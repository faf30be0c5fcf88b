package gobin

import (
	"sort"
	"strings"
)

// Function flags, as in internal/abi.FuncFlag.
const (
	FlagTopFrame = 1 << 0
	FlagSPWrite  = 1 << 1
	FlagAsm      = 1 << 2
)

// Func is one function of the function table.
type Func struct {
	Name       string
	Entry, End uint64 // [Entry, End) is the function's code
	FuncID     uint8
	Flag       uint8
	off        uint32 // offset of the _func record in pcln
	b          *Binary
}

// FuncIDWrapper is internal/abi.FuncIDWrapper of go1.27 (the fork's
// release): compiler-generated code (method and go/defer statement
// wrappers) that the runtime's tracebacks leave out. FuncIDs are renumbered
// between releases, so it is meaningful only for binaries of that release.
const FuncIDWrapper = 23

func (f *Func) TopFrame() bool { return f.Flag&FlagTopFrame != 0 }
func (f *Func) SPWrite() bool  { return f.Flag&FlagSPWrite != 0 }
func (f *Func) Asm() bool      { return f.Flag&FlagAsm != 0 }

// _func field offsets (runtime/runtime2.go), the size of its fixed part,
// and the pcdata and funcdata indexes used here (internal/abi).
const (
	fEntryOff  = 0
	fNameOff   = 4
	fPcsp      = 16
	fPcfile    = 20
	fPcln      = 24
	fNpcdata   = 28
	fCuOffset  = 32
	fFuncID    = 40
	fFlag      = 41
	fNfuncdata = 43
	funcSize   = 44 // the pcdata offsets follow, then the funcdata offsets

	pcdataInlTreeIndex = 2
	funcdataInlTree    = 3

	// runtime.inlinedCall: funcID, 3 pad bytes, nameOff, parentPc, startLine.
	inlFuncID       = 0
	inlNameOff      = 4
	inlParentPC     = 8
	inlStartLine    = 12
	inlinedCallSize = 16
	// maxInlineDepth bounds the walk up a (possibly cyclic, corrupt) tree.
	maxInlineDepth = 1000
)

// Code returns the machine code of f.
func (b *Binary) Code(f *Func) ([]byte, error) { return b.Read(f.Entry, f.End-f.Entry) }

// FindFunc returns the function containing link-time pc, or nil.
func (b *Binary) FindFunc(pc uint64) *Func {
	i := sort.Search(len(b.Funcs), func(i int) bool { return b.Funcs[i].Entry > pc })
	if i == 0 {
		return nil
	}
	f := &b.Funcs[i-1]
	if pc >= f.End {
		return nil
	}
	return f
}

// FuncNameIs reports whether the function containing pc is named name.
func (b *Binary) FuncNameIs(pc uint64, name string) bool {
	f := b.FindFunc(pc)
	return f != nil && f.Name == name
}

// LookupFunc returns the function named name (the first, if the table
// repeats a name), or nil.
func (b *Binary) LookupFunc(name string) *Func { return b.byName[name] }

// InlineExpansion reports whether inlined frames can be expanded.
func (b *Binary) InlineExpansion() bool { return !b.inlineSkip }

func (b *Binary) u32(p []byte, off uint64) uint32 {
	if off > uint64(len(p)) || uint64(len(p))-off < 4 {
		return 0
	}
	return b.Order.Uint32(p[off:])
}

// field reads the uint32 at off in f's _func record.
func (f *Func) field(off uint64) uint32 { return f.b.u32(f.b.pcln, uint64(f.off)+off) }

// pcvalue decodes the pc-value table at off for targetpc; -1 if absent.
func (f *Func) pcvalue(off uint32, targetpc uint64) int32 {
	if targetpc < f.Entry || targetpc >= f.End {
		return -1
	}
	val := int32(-1)
	f.walkTable(off, func(r ValueRun) bool {
		if targetpc < r.End {
			val = r.Value
			return false
		}
		return true
	})
	return val
}

// A ValueRun is a PC range [Start, End) over which a pc-value table holds
// Value.
type ValueRun struct {
	Start, End uint64
	Value      int32
}

// walkTable calls fn for each run of the pc-value table at off, in PC
// order, until fn returns false; it reports whether the table was read to
// its end (f's end, or a terminator before the alignment padding). A table describes f's code only, one step per value change, so a
// table that runs past f's end, or takes more steps than f has
// instructions, is corrupt: the walk costs at most f's size, whatever the
// bytes say.
func (f *Func) walkTable(off uint32, fn func(ValueRun) bool) bool {
	b := f.b
	if off == 0 || uint64(off) >= uint64(len(b.pctab)) {
		return false
	}
	p := b.pctab[off:]
	pc, val := f.Entry, int32(-1)
	maxSteps := (f.End-f.Entry)/b.Quantum + 1
	for step, first := uint64(0), true; step < maxSteps && pc < f.End; step, first = step+1, false {
		uv, n := uvarint(p)
		if n <= 0 {
			return false
		}
		if uv == 0 && !first {
			return true // the end of the table: the rest of f is padding
		}
		p = p[n:]
		val += int32(-(uv & 1) ^ (uv >> 1))
		pd, n := uvarint(p)
		if n <= 0 {
			return false
		}
		p = p[n:]
		start := pc
		pc += uint64(pd) * b.Quantum
		if !fn(ValueRun{start, min(pc, f.End), val}) {
			return true
		}
	}
	return pc >= f.End
}

// SPDeltaRuns returns f's SP-delta table decoded whole (SPDelta for every
// PC at once), and false if the table is absent or does not reach f's end.
func (f *Func) SPDeltaRuns() ([]ValueRun, bool) {
	if f.End == f.Entry || f.field(fPcsp) == 0 {
		return nil, true // no PC described: a marker such as go:textfipsstart
	}
	var runs []ValueRun
	ok := f.walkTable(f.field(fPcsp), func(r ValueRun) bool {
		runs = append(runs, r)
		return true
	})
	return runs, ok
}

func uvarint(p []byte) (uint32, int) {
	var v uint32
	for i, shift := 0, uint(0); i < len(p) && shift < 35; i, shift = i+1, shift+7 {
		v |= uint32(p[i]&0x7f) << shift
		if p[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

func (f *Func) pcdata(table uint32, pc uint64) int32 {
	if table >= f.field(fNpcdata) {
		return -1
	}
	return f.pcvalue(f.field(funcSize+4*uint64(table)), pc)
}

// SPDelta returns the stack pointer offset from the entry SP at pc (the
// number of bytes the function has pushed), or -1.
func (f *Func) SPDelta(pc uint64) int32 { return f.pcvalue(f.field(fPcsp), pc) }

// FileLine returns the source position of pc inside f (inline-aware: the
// innermost inlined function's position), or "?", 0.
func (f *Func) FileLine(pc uint64) (string, int) {
	fileno := f.pcvalue(f.field(fPcfile), pc)
	line := f.pcvalue(f.field(fPcln), pc)
	if fileno < 0 || line < 0 {
		return "?", 0
	}
	cu := uint64(f.field(fCuOffset))
	fileoff := f.b.u32(f.b.cutab, (cu+uint64(fileno))*4)
	file, ok := cstring(f.b.filetab, uint64(fileoff))
	if fileoff == ^uint32(0) || !ok {
		return "?", 0
	}
	return file, int(line)
}

// inlTree returns the address of f's inline tree, or 0.
func (f *Func) inlTree() uint64 {
	b := f.b
	if b.inlineSkip || uint64(f.off)+fNfuncdata >= uint64(len(b.pcln)) {
		return 0
	}
	if nfd := b.pcln[uint64(f.off)+fNfuncdata]; funcdataInlTree >= nfd {
		return 0
	}
	off := f.field(funcSize + 4*uint64(f.field(fNpcdata)) + 4*funcdataInlTree)
	if off == ^uint32(0) {
		return 0
	}
	return b.gofunc + uint64(off)
}

// Frame is one logical frame: a physical function or one inlined into it.
type Frame struct {
	PC      uint64 // the PC this frame was looked up with
	Func    string // function name as the runtime stores it
	File    string
	Line    int
	Entry   uint64 // entry of the physical function
	Inlined bool   // true if this frame was inlined into its caller
	// StartLine is an inlined function's first line (its func keyword),
	// from the inline tree; 0 for a physical frame (FileLine of Entry).
	StartLine int
	FuncID    uint8
	Physical  *Func
}

// Frames returns the logical frames at pc, innermost first. If ret is true,
// pc is a return address and is backed up into the call instruction first,
// as runtime.CallersFrames does.
func (b *Binary) Frames(pc uint64, ret bool) []Frame {
	lookup := pc
	if ret && lookup > 0 {
		lookup--
	}
	f := b.FindFunc(lookup)
	if f == nil {
		return nil
	}
	var out []Frame
	tree := f.inlTree()
	var ic [inlinedCallSize]byte
	for depth := 0; tree != 0 && depth < maxInlineDepth; depth++ {
		idx := f.pcdata(pcdataInlTreeIndex, lookup)
		if idx < 0 || b.ReadVA(tree+uint64(idx)*inlinedCallSize, ic[:]) != nil {
			break
		}
		file, line := f.FileLine(lookup)
		name, ok := cstring(b.funcnames, uint64(b.Order.Uint32(ic[inlNameOff:])))
		if !ok {
			name = "?"
		}
		out = append(out, Frame{PC: pc, Func: name, File: file, Line: line,
			Entry: f.Entry, Inlined: true, FuncID: ic[inlFuncID], Physical: f,
			StartLine: int(int32(b.Order.Uint32(ic[inlStartLine:])))})
		parent := f.Entry + uint64(int64(int32(b.Order.Uint32(ic[inlParentPC:]))))
		if parent == lookup {
			break
		}
		lookup = parent
	}
	file, line := f.FileLine(lookup)
	out = append(out, Frame{PC: pc, Func: f.Name, File: file, Line: line, Entry: f.Entry, FuncID: f.FuncID, Physical: f})
	return out
}

// OuterInlined returns the calls inlined into f's own body (not into a
// function inlined into it), in PC order: for each, the inlined function's
// frame at the first PC of its code. A call site split into several PC
// ranges is returned once per range.
func (b *Binary) OuterInlined(f *Func) []Frame {
	if f.inlTree() == 0 || pcdataInlTreeIndex >= f.field(fNpcdata) {
		return nil
	}
	var out []Frame
	f.walkTable(f.field(funcSize+4*pcdataInlTreeIndex), func(r ValueRun) bool {
		if r.Value >= 0 {
			if fr := b.Frames(r.Start, false); len(fr) >= 2 {
				out = append(out, fr[len(fr)-2])
			}
		}
		return true
	})
	return out
}

// PrintName formats a function name as Go tracebacks do: the type arguments
// of a generic function (and of a generic method's receiver) print as [...].
func PrintName(name string) string {
	i := strings.IndexByte(name, '[')
	j := strings.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return name
	}
	interior := name[i+1 : j]
	if !strings.Contains(interior, "[") {
		return name[:i] + "[...]" + name[j+1:]
	}
	// Generic method of a generic type: "T[...].M[...]".
	depth, rbr := 1, -1
	for k, c := range interior {
		switch c {
		case '[':
			depth++
			if depth == 1 {
				return name[:i] + "[...]" + interior[rbr+1:k] + "[...]" + name[j+1:]
			}
		case ']':
			depth--
			if depth < 0 {
				return name
			}
			if depth == 0 {
				rbr = k
			}
		}
	}
	if depth == 1 && rbr == -1 {
		return name[:i] + "[...]" + name[j+1:]
	}
	return name
}
