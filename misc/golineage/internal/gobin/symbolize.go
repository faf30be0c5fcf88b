package gobin

import (
	"sort"
	"strings"
)

// Func is one function of the function table.
type Func struct {
	Entry  uint64
	Name   string
	FuncID uint8
	off    uint32 // offset of the _func record in pcln
	b      *Binary
}

// Frame is one logical frame: a physical function or one inlined into it.
type Frame struct {
	PC       uint64 // the PC this frame was looked up with
	Func     string // function name as the runtime stores it
	File     string
	Line     int
	Entry    uint64 // entry of the physical function
	Inlined  bool   // true if this frame was inlined into its caller
	FuncID   uint8
	Physical *Func
}

// _func field offsets (runtime/runtime2.go).
const (
	fNameOff   = 4
	fPcsp      = 16
	fPcfile    = 20
	fPcln      = 24
	fNpcdata   = 28
	fCuOffset  = 32
	fFuncID    = 40
	fNfuncdata = 43
	fPcdata    = 44

	pcdataInlTreeIndex = 2
	funcdataInlTree    = 3
	inlinedCallSize    = 16
)

func (b *Binary) u32(p []byte, off uint32) uint32 {
	if uint64(off)+4 > uint64(len(p)) {
		return 0
	}
	return b.Order.Uint32(p[off:])
}

// funcAt returns the offset of the _func record of the function containing
// pc (link-time) and its entry, without allocating.
func (b *Binary) funcAt(pc uint64) (funcoff uint32, entry uint64, ok bool) {
	if pc < b.Text || pc >= b.Etext || pc-b.Text >= 1<<32 {
		return 0, 0, false
	}
	rel := pc - b.Text
	n := b.nfunc
	i := sort.Search(n+1, func(i int) bool { return uint64(b.u32(b.pcln, uint32(i*8))) > rel }) - 1
	if i < 0 || i >= n {
		return 0, 0, false
	}
	funcoff = b.u32(b.pcln, uint32(i*8+4))
	if uint64(funcoff)+fPcdata > uint64(len(b.pcln)) {
		return 0, 0, false
	}
	return funcoff, b.Text + uint64(b.u32(b.pcln, funcoff)), true
}

// FindFunc returns the function containing pc (link-time), or nil.
func (b *Binary) FindFunc(pc uint64) *Func {
	funcoff, entry, ok := b.funcAt(pc)
	if !ok {
		return nil
	}
	f := &Func{Entry: entry, off: funcoff, b: b}
	f.Name = b.funcName(int32(b.u32(b.pcln, funcoff+fNameOff)))
	f.FuncID = b.pcln[funcoff+fFuncID]
	return f
}

// FuncNameIs reports whether the function containing pc is named name,
// without allocating (for per-frame checks in unwinders).
func (b *Binary) FuncNameIs(pc uint64, name string) bool {
	funcoff, _, ok := b.funcAt(pc)
	if !ok {
		return false
	}
	off := int32(b.u32(b.pcln, funcoff+fNameOff))
	if off < 0 || int(off)+len(name) >= len(b.funcnames) {
		return false
	}
	return string(b.funcnames[off:int(off)+len(name)]) == name && b.funcnames[int(off)+len(name)] == 0
}

// LookupFunc returns the function named name, or nil.
func (b *Binary) LookupFunc(name string) *Func {
	for i := 0; i < b.nfunc; i++ {
		off := b.u32(b.pcln, uint32(i*8+4))
		if b.funcName(int32(b.u32(b.pcln, off+fNameOff))) == name {
			return b.FindFunc(b.Text + uint64(b.u32(b.pcln, uint32(i*8))))
		}
	}
	return nil
}

func (b *Binary) funcName(off int32) string {
	if off < 0 || int(off) >= len(b.funcnames) {
		return "?"
	}
	s := b.funcnames[off:]
	if i := strings.IndexByte(string(s[:min(len(s), 4096)]), 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

func (f *Func) field(off uint32) uint32 { return f.b.u32(f.b.pcln, f.off+off) }

// pcvalue decodes the pc-value table at off for targetpc; -1 if absent.
func (f *Func) pcvalue(off uint32, targetpc uint64) int32 {
	b := f.b
	if off == 0 || uint64(off) >= uint64(len(b.pctab)) {
		return -1
	}
	p := b.pctab[off:]
	pc, val := f.Entry, int32(-1)
	for first := true; ; first = false {
		uv, n := uvarint(p)
		if n <= 0 || uv == 0 && !first {
			return -1
		}
		p = p[n:]
		val += int32(-(uv & 1) ^ (uv >> 1))
		pd, n := uvarint(p)
		if n <= 0 {
			return -1
		}
		p = p[n:]
		pc += uint64(pd) * b.Quantum
		if targetpc < pc {
			return val
		}
	}
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
	return f.pcvalue(f.field(fPcdata+4*table), pc)
}

// SPDelta returns the stack pointer offset from the entry SP at pc (the
// number of bytes the function has pushed), or -1.
func (f *Func) SPDelta(pc uint64) int32 { return f.pcvalue(f.field(fPcsp), pc) }

// FileLine returns the source position of pc inside f (inline-aware: the
// innermost inlined function's position).
func (f *Func) FileLine(pc uint64) (string, int) {
	fileno := f.pcvalue(f.field(fPcfile), pc)
	line := f.pcvalue(f.field(fPcln), pc)
	if fileno < 0 || line < 0 {
		return "?", 0
	}
	cu := f.field(fCuOffset)
	fileoff := f.b.u32(f.b.cutab, (cu+uint32(fileno))*4)
	if fileoff == ^uint32(0) || uint64(fileoff) >= uint64(len(f.b.filetab)) {
		return "?", 0
	}
	s := f.b.filetab[fileoff:]
	if i := strings.IndexByte(string(s[:min(len(s), 4096)]), 0); i >= 0 {
		s = s[:i]
	}
	return string(s), int(line)
}

func (f *Func) inlTree() uint64 {
	b := f.b
	if b.inlineSkip {
		return 0
	}
	nfd := uint32(b.pcln[min(uint64(f.off+fNfuncdata), uint64(len(b.pcln)-1))])
	if funcdataInlTree >= nfd {
		return 0
	}
	off := f.field(fPcdata + 4*f.field(fNpcdata) + 4*funcdataInlTree)
	if off == ^uint32(0) {
		return 0
	}
	return b.gofunc + uint64(off)
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
	for depth := 0; tree != 0 && depth < 1000; depth++ {
		idx := f.pcdata(pcdataInlTreeIndex, lookup)
		if idx < 0 || b.ReadVA(tree+uint64(idx)*inlinedCallSize, ic[:]) != nil {
			break
		}
		file, line := f.FileLine(lookup)
		out = append(out, Frame{PC: pc, Func: b.funcName(int32(b.Order.Uint32(ic[4:]))), File: file, Line: line,
			Entry: f.Entry, Inlined: true, FuncID: ic[0], Physical: f})
		parent := f.Entry + uint64(int64(int32(b.Order.Uint32(ic[8:]))))
		if parent == lookup {
			break
		}
		lookup = parent
	}
	file, line := f.FileLine(lookup)
	out = append(out, Frame{PC: pc, Func: f.Name, File: file, Line: line, Entry: f.Entry, FuncID: f.FuncID, Physical: f})
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
