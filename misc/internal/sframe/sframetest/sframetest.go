// Package sframetest encodes SFrame version 3 sections by hand, for tests:
// the decoder's own and fpcheck sframe's, which append such a section to a
// Go binary to stand in for the linker's. It is written from the
// specification's layout (see package sframe), not from the linker's
// writer, whose output those tests exist to check.
package sframetest

import (
	"encoding/binary"

	"fpsafe.dev/misc/internal/sframe"
)

// Row is one FRE.
type Row struct {
	Start     uint32
	Base      uint8 // sframe.BaseSP or sframe.BaseFP
	Size      int   // data word size in bytes: 1 (or 0), 2 or 4
	Words     []int32
	MangledRA bool
}

// Func is one FDE with its rows.
type Func struct {
	Start   uint64
	Size    uint32
	FREType uint8 // sframe.FRETypeAddr1, ...
	PCType  uint8
	Signal  bool
	FDEType uint8
	RepSize uint8
	Rows    []Row
}

// Section is a whole section.
type Section struct {
	ABI     uint8
	Flags   uint8
	FixedFP int8
	FixedRA int8
	Aux     []byte
	Addr    uint64
	Funcs   []Func
}

func wordCode(size int) uint8 {
	switch size {
	case 2:
		return 1
	case 4:
		return 2
	}
	return 0
}

// Encode lays s out as a section loaded at s.Addr: header, auxiliary
// header, FDE index, then each function's attributes and rows.
func (s Section) Encode() []byte {
	le := binary.LittleEndian
	var fres []byte
	attrOffs := make([]uint32, len(s.Funcs))
	nfres := 0
	for i, f := range s.Funcs {
		attrOffs[i] = uint32(len(fres))
		info := f.FREType | f.PCType<<4
		if f.Signal {
			info |= 1 << 7
		}
		fres = le.AppendUint16(fres, uint16(len(f.Rows)))
		fres = append(fres, info, f.FDEType, f.RepSize)
		for _, r := range f.Rows {
			nfres++
			switch f.FREType {
			case sframe.FRETypeAddr1:
				fres = append(fres, byte(r.Start))
			case sframe.FRETypeAddr2:
				fres = le.AppendUint16(fres, uint16(r.Start))
			default:
				fres = le.AppendUint32(fres, r.Start)
			}
			ri := r.Base | uint8(len(r.Words))<<1 | wordCode(r.Size)<<5
			if r.MangledRA {
				ri |= 1 << 7
			}
			fres = append(fres, ri)
			for _, w := range r.Words {
				switch r.Size {
				case 2:
					fres = le.AppendUint16(fres, uint16(w))
				case 4:
					fres = le.AppendUint32(fres, uint32(w))
				default:
					fres = append(fres, byte(w))
				}
			}
		}
	}
	hdr := uint64(sframe.HeaderSize + len(s.Aux))
	out := le.AppendUint16(nil, sframe.Magic)
	out = append(out, sframe.Version3, s.Flags, s.ABI, byte(s.FixedFP), byte(s.FixedRA), byte(len(s.Aux)))
	out = le.AppendUint32(out, uint32(len(s.Funcs)))
	out = le.AppendUint32(out, uint32(nfres))
	out = le.AppendUint32(out, uint32(len(fres)))
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, uint32(len(s.Funcs)*sframe.FDEIndexLen))
	out = append(out, s.Aux...)
	for i, f := range s.Funcs {
		field := s.Addr + hdr + uint64(i*sframe.FDEIndexLen)
		rel := f.Start - s.Addr
		if s.Flags&sframe.FlagFuncStartPCRel != 0 {
			rel = f.Start - field
		}
		out = le.AppendUint64(out, rel)
		out = le.AppendUint32(out, f.Size)
		out = le.AppendUint32(out, attrOffs[i])
	}
	return append(out, fres...)
}
