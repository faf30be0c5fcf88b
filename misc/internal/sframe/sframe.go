// Package sframe decodes an SFrame section (.sframe), version 3, as "The
// SFrame format" (binutils 2.46) specifies it, answers for a PC the unwind
// rule the section gives there (RuleAt), and walks a stack with the
// section alone (Step, Unwind). It is the one SFrame reader under
// misc/: fpcheck verifies the Go linker's .sframe with it, and it is written
// from the specification alone, not from the writer's code, so that the
// check is independent of what it checks.
//
// Layout of a section (all fields in the target's byte order, packed):
//
//	header      28 bytes: magic 0xdee2, version, flags, ABI, fixed FP and RA
//	            offsets from the CFA, auxiliary header length, number of
//	            FDEs and FREs, FRE sub-section length, FDE and FRE
//	            sub-section offsets (from the end of the header)
//	aux header  auxhdr_len bytes
//	FDE index   16 bytes per function: start (signed 64-bit, from the field
//	            itself when the PC-relative flag is set, else from the
//	            section start), size, offset of its attributes in the FRE
//	            sub-section
//	FREs        per function: 5 bytes of attributes (number of FREs, info
//	            byte: FRE type, PC type, PAuth key, signal frame; info2:
//	            FDE type, default or flexible; repeat size), then the FREs:
//	            start offset (1, 2 or 4 bytes, by FRE type), info byte
//	            (CFA base, number and size of data words, mangled RA), data
//	            words
//
// An FRE with no data words says the return address is undefined there:
// the frame is the outermost one. A default FDE's words are, on AMD64, the
// CFA offset from its base register, then the FP's offset from the CFA (the
// RA is at the header's fixed offset); on AArch64 the CFA offset, the RA's
// and the FP's. A flexible FDE's words are pairs of a control word (base
// register, dereference) and an offset, for CFA, RA and FP, where a single
// zero control word stands for an untracked RA or FP.
//
// The input is foreign bytes: every count and offset is checked against the
// section's size before use, so allocation is bounded by it, and a section
// that contradicts itself gives an *Error, never a panic.
package sframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Format constants, as the specification names them.
const (
	Magic    = 0xdee2
	Version3 = 3

	FlagFDESorted      = 0x1 // FDEs sorted by start address
	FlagFramePointer   = 0x2 // version 2 only; not defined in version 3
	FlagFuncStartPCRel = 0x4 // FDE start offsets are relative to the field itself
	flagsV3            = FlagFDESorted | FlagFuncStartPCRel

	ABIAArch64BE = 1
	ABIAArch64LE = 2
	ABIAMD64LE   = 3
	ABIS390XBE   = 4

	FRETypeAddr1 = 0
	FRETypeAddr2 = 1
	FRETypeAddr4 = 2

	PCTypeInc  = 0 // FRE start offsets are increments from the function start
	PCTypeMask = 1 // FRE start offsets are matched against PC modulo the repeat size

	FDETypeDefault = 0
	FDETypeFlex    = 1

	BaseFP = 0 // FRE info: the CFA is computed from the frame pointer
	BaseSP = 1 // ... from the stack pointer

	HeaderSize  = 28
	FDEIndexLen = 16
	FDEAttrLen  = 5
)

// ErrCorrupt and ErrUnsupported are the kinds an *Error wraps; ErrNoFDE and
// ErrNoFRE are what RuleAt returns for a PC the section does not cover.
var (
	ErrCorrupt     = errors.New("corrupt .sframe section")
	ErrUnsupported = errors.New("unsupported .sframe section")
	ErrNoFDE       = errors.New("no SFrame FDE covers the PC")
	ErrNoFRE       = errors.New("the PC's SFrame FDE has no FRE for it")
)

// An Error is a section that cannot be decoded: Kind says why, Off where.
type Error struct {
	Kind   error // ErrCorrupt or ErrUnsupported
	Off    int   // byte offset in the section
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v at offset %#x: %s", e.Kind, e.Off, e.Detail)
}

func (e *Error) Unwrap() error { return e.Kind }

func corrupt(off int, format string, args ...any) error {
	return &Error{ErrCorrupt, off, fmt.Sprintf(format, args...)}
}

// Header is the decoded section header.
type Header struct {
	Version       uint8
	Flags         uint8
	ABI           uint8
	FixedFPOffset int8 // 0: not fixed
	FixedRAOffset int8 // 0: not fixed
	AuxLen        uint8
	NumFDEs       uint32
	NumFREs       uint32
	FRELen        uint32
	FDEOff        uint32
	FREOff        uint32
}

// An FDE describes one function.
type FDE struct {
	Start   uint64 // the function's start address
	Size    uint32
	AttrOff uint32 // offset of its attributes in the FRE sub-section
	Info    uint8
	Info2   uint8
	RepSize uint8
	FREs    []FRE
}

func (f *FDE) FREType() uint8 { return f.Info & 0xf }
func (f *FDE) PCType() uint8  { return f.Info >> 4 & 1 }
func (f *FDE) PAuthB() bool   { return f.Info>>5&1 != 0 }
func (f *FDE) Signal() bool   { return f.Info>>7&1 != 0 }
func (f *FDE) Type() uint8    { return f.Info2 & 0x1f }

// End is the address just past the function.
func (f *FDE) End() uint64 { return f.Start + uint64(f.Size) }

// An FRE is one row: the rule from its start offset up to the next row's.
type FRE struct {
	Start uint32 // offset from the function start (or within the repeat block)
	Info  uint8
	Words []int32
}

func (r *FRE) Base() uint8        { return r.Info & 1 }
func (r *FRE) MangledRA() bool    { return r.Info>>7&1 != 0 }
func wordCount(info uint8) int    { return int(info >> 1 & 0xf) }
func wordSizeCode(info uint8) int { return int(info >> 5 & 3) }

// Section is a decoded .sframe section.
type Section struct {
	Header
	Addr uint64 // the section's address
	Aux  []byte // auxiliary header
	FDEs []FDE  // sorted by Start
}

// Decode decodes data, the contents of a .sframe section loaded at addr.
func Decode(data []byte, addr uint64) (*Section, error) {
	if len(data) < HeaderSize {
		return nil, corrupt(0, "%d bytes, shorter than the %d-byte header", len(data), HeaderSize)
	}
	var order binary.ByteOrder = binary.LittleEndian
	switch {
	case binary.LittleEndian.Uint16(data) == Magic:
	case binary.BigEndian.Uint16(data) == Magic:
		order = binary.BigEndian
	default:
		return nil, corrupt(0, "magic %#04x, want %#04x", binary.LittleEndian.Uint16(data), Magic)
	}
	h := Header{
		Version:       data[2],
		Flags:         data[3],
		ABI:           data[4],
		FixedFPOffset: int8(data[5]),
		FixedRAOffset: int8(data[6]),
		AuxLen:        data[7],
		NumFDEs:       order.Uint32(data[8:]),
		NumFREs:       order.Uint32(data[12:]),
		FRELen:        order.Uint32(data[16:]),
		FDEOff:        order.Uint32(data[20:]),
		FREOff:        order.Uint32(data[24:]),
	}
	if h.Version != Version3 {
		return nil, &Error{ErrUnsupported, 2, fmt.Sprintf("version %d (version %d is read)", h.Version, Version3)}
	}
	if h.Flags&^flagsV3 != 0 {
		return nil, corrupt(3, "flags %#x have bits undefined in version 3", h.Flags)
	}
	switch h.ABI {
	case ABIAMD64LE, ABIAArch64LE:
		if order != binary.LittleEndian {
			return nil, corrupt(4, "ABI %d is little-endian but the magic is big-endian", h.ABI)
		}
	case ABIAArch64BE, ABIS390XBE:
		return nil, &Error{ErrUnsupported, 4, fmt.Sprintf("ABI %d (AMD64 and little-endian AArch64 are read)", h.ABI)}
	default:
		return nil, corrupt(4, "unknown ABI %d", h.ABI)
	}
	if h.ABI == ABIAMD64LE && h.FixedRAOffset == 0 {
		return nil, corrupt(6, "AMD64 section without a fixed RA offset")
	}
	hdrEnd := uint64(HeaderSize) + uint64(h.AuxLen)
	size := uint64(len(data))
	if hdrEnd > size {
		return nil, corrupt(7, "auxiliary header of %d bytes runs past the section's %d", h.AuxLen, size)
	}
	s := &Section{Header: h, Addr: addr, Aux: data[HeaderSize:hdrEnd]}
	fdeStart := hdrEnd + uint64(h.FDEOff)
	if fdeStart > size || uint64(h.NumFDEs) > (size-fdeStart)/FDEIndexLen {
		return nil, corrupt(20, "%d FDEs at offset %#x run past the section's %d bytes", h.NumFDEs, fdeStart, size)
	}
	freStart := hdrEnd + uint64(h.FREOff)
	if freStart > size || uint64(h.FRELen) > size-freStart {
		return nil, corrupt(24, "FRE sub-section [%#x, +%#x) runs past the section's %d bytes", freStart, h.FRELen, size)
	}
	fres := data[freStart : freStart+uint64(h.FRELen)]
	s.FDEs = make([]FDE, h.NumFDEs)
	total := uint64(0)
	for i := range s.FDEs {
		off := fdeStart + uint64(i)*FDEIndexLen
		e := data[off:]
		f := &s.FDEs[i]
		rel := int64(order.Uint64(e))
		base := addr
		if h.Flags&FlagFuncStartPCRel != 0 {
			base = addr + off
		}
		f.Start = base + uint64(rel)
		f.Size = order.Uint32(e[8:])
		f.AttrOff = order.Uint32(e[12:])
		if f.End() < f.Start {
			return nil, corrupt(int(off), "FDE %d: function [%#x, +%#x) wraps around", i, f.Start, f.Size)
		}
		n, err := decodeFREs(f, fres, order, h.ABI, int(freStart))
		if err != nil {
			return nil, fmt.Errorf("FDE %d (function at %#x): %w", i, f.Start, err)
		}
		total += uint64(n)
	}
	if total != uint64(h.NumFREs) {
		return nil, corrupt(12, "header counts %d FREs, the FDEs hold %d", h.NumFREs, total)
	}
	sorted := sort.SliceIsSorted(s.FDEs, func(i, j int) bool { return s.FDEs[i].Start < s.FDEs[j].Start })
	if !sorted {
		if h.Flags&FlagFDESorted != 0 {
			return nil, corrupt(3, "FDEs flagged sorted are not sorted by start address")
		}
		sort.SliceStable(s.FDEs, func(i, j int) bool { return s.FDEs[i].Start < s.FDEs[j].Start })
	}
	return s, nil
}

// decodeFREs reads f's attributes and FREs from fres, the FRE sub-section,
// which starts at section offset base; it returns the number of FREs.
func decodeFREs(f *FDE, fres []byte, order binary.ByteOrder, abi uint8, base int) (int, error) {
	off := uint64(f.AttrOff)
	if off > uint64(len(fres)) || uint64(len(fres))-off < FDEAttrLen {
		return 0, corrupt(base+int(min(off, uint64(len(fres)))), "attributes at FRE offset %#x run past the FRE sub-section's %d bytes", f.AttrOff, len(fres))
	}
	a := fres[off:]
	n := int(order.Uint16(a))
	f.Info, f.Info2, f.RepSize = a[2], a[3], a[4]
	at := func() int { return base + int(off) }
	if f.Info>>6&1 != 0 {
		return 0, corrupt(at()+2, "FDE info byte %#x sets the unused bit 6", f.Info)
	}
	var addrSize uint64
	switch f.FREType() {
	case FRETypeAddr1:
		addrSize = 1
	case FRETypeAddr2:
		addrSize = 2
	case FRETypeAddr4:
		addrSize = 4
	default:
		return 0, corrupt(at()+2, "unknown FRE type %d", f.FREType())
	}
	switch f.Type() {
	case FDETypeDefault, FDETypeFlex:
	default:
		return 0, &Error{ErrUnsupported, at() + 3, fmt.Sprintf("FDE type %d (default and flexible are read)", f.Type())}
	}
	if f.PCType() == PCTypeMask && f.RepSize == 0 {
		return 0, corrupt(at()+4, "mask PC type with a zero repeat size")
	}
	off += FDEAttrLen
	// Each FRE takes at least addrSize+1 bytes: n is bounded by the bytes left.
	if uint64(n) > (uint64(len(fres))-off)/(addrSize+1) {
		return 0, corrupt(at(), "%d FREs cannot fit in the FRE sub-section", n)
	}
	f.FREs = make([]FRE, n)
	limit := uint64(f.Size)
	if f.PCType() == PCTypeMask {
		limit = uint64(f.RepSize)
	}
	for i := range f.FREs {
		if uint64(len(fres))-off < addrSize+1 {
			return 0, corrupt(at(), "FRE %d runs past the FRE sub-section", i)
		}
		r := &f.FREs[i]
		switch addrSize {
		case 1:
			r.Start = uint32(fres[off])
		case 2:
			r.Start = uint32(order.Uint16(fres[off:]))
		case 4:
			r.Start = order.Uint32(fres[off:])
		}
		r.Info = fres[off+addrSize]
		if uint64(r.Start) >= limit && limit > 0 {
			return 0, corrupt(at(), "FRE %d starts at offset %#x, past the function's %#x bytes", i, r.Start, limit)
		}
		if i > 0 && r.Start <= f.FREs[i-1].Start {
			return 0, corrupt(at(), "FRE %d starts at %#x, not after FRE %d's %#x", i, r.Start, i-1, f.FREs[i-1].Start)
		}
		off += addrSize + 1
		wsize := uint64(1) << wordSizeCode(r.Info)
		if wordSizeCode(r.Info) == 3 {
			return 0, corrupt(at(), "FRE %d: data word size code 3 is undefined", i)
		}
		nw := uint64(wordCount(r.Info))
		if uint64(len(fres))-off < nw*wsize {
			return 0, corrupt(at(), "FRE %d: %d data words run past the FRE sub-section", i, nw)
		}
		if err := checkWords(f, abi, r.Info, i); err != nil {
			return 0, corrupt(at(), "%v", err)
		}
		r.Words = make([]int32, nw)
		for j := range r.Words {
			w := fres[off+uint64(j)*wsize:]
			switch wsize {
			case 1:
				r.Words[j] = int32(int8(w[0]))
			case 2:
				r.Words[j] = int32(int16(order.Uint16(w)))
			case 4:
				r.Words[j] = int32(order.Uint32(w))
			}
		}
		off += nw * wsize
	}
	return n, nil
}

// checkWords checks an FRE's number of data words against its FDE type and
// the ABI.
func checkWords(f *FDE, abi uint8, info uint8, i int) error {
	n := wordCount(info)
	if f.Type() == FDETypeFlex {
		if n == 1 || n > 6 {
			return fmt.Errorf("FRE %d: %d data words in a flexible FDE (0, or 2 to 6)", i, n)
		}
		return nil
	}
	max := 3
	if abi == ABIAMD64LE {
		max = 2
	}
	if n > max {
		return fmt.Errorf("FRE %d: %d data words (at most %d on this ABI)", i, n, max)
	}
	return nil
}

// Lookup returns the FDE whose function contains pc, or nil.
func (s *Section) Lookup(pc uint64) *FDE {
	i := sort.Search(len(s.FDEs), func(i int) bool { return s.FDEs[i].Start > pc })
	if i == 0 {
		return nil
	}
	f := &s.FDEs[i-1]
	if pc >= f.End() {
		return nil
	}
	return f
}

// FREAt returns the row of f that applies at pc, or nil.
func (f *FDE) FREAt(pc uint64) *FRE {
	if pc < f.Start || pc >= f.End() {
		return nil
	}
	off := pc - f.Start
	if f.PCType() == PCTypeMask {
		off %= uint64(f.RepSize)
	}
	i := sort.Search(len(f.FREs), func(i int) bool { return uint64(f.FREs[i].Start) > off })
	if i == 0 {
		return nil
	}
	return &f.FREs[i-1]
}
