package gobin

import (
	"debug/elf"
	"errors"
	"fmt"
)

// PTGNUSFrame is the program header type of the segment that holds the
// .sframe section (the SFrame specification; debug/elf does not name it).
const PTGNUSFrame elf.ProgType = 0x6474e554

// ErrNoSFrame: the file has neither a PT_GNU_SFRAME segment nor an .sframe
// section.
var ErrNoSFrame = errors.New("no SFrame unwind table")

// SFrameData is a binary's .sframe contents and where they were found.
type SFrameData struct {
	Addr    uint64 // link-time address of the first byte
	Data    []byte
	Segment bool // found through a PT_GNU_SFRAME program header
	Section bool // a section named .sframe exists (at the same address, if both)
}

// SFrame returns the binary's SFrame table: the PT_GNU_SFRAME segment's
// bytes (what the kernel and other unwinders read), else those of a section
// named .sframe. The caller judges a table found only as a section.
func (b *Binary) SFrame() (*SFrameData, error) {
	sec := b.ELF.Section(".sframe")
	for _, p := range b.ELF.Progs {
		if p.Type != PTGNUSFrame {
			continue
		}
		if p.Off > uint64(b.size) || p.Filesz > uint64(b.size)-p.Off {
			return nil, openError(b.Path, ErrBadELF, "PT_GNU_SFRAME segment [%#x, +%#x) runs past the end of the file", p.Off, p.Filesz)
		}
		data := make([]byte, p.Filesz)
		if _, err := b.r.ReadAt(data, int64(p.Off)); err != nil {
			return nil, fmt.Errorf("%s: reading the PT_GNU_SFRAME segment: %w", b.Path, err)
		}
		return &SFrameData{Addr: p.Vaddr, Data: data, Segment: true, Section: sec != nil && sec.Addr == p.Vaddr}, nil
	}
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("%s: %w: no PT_GNU_SFRAME segment and no .sframe section (link with a toolchain that emits SFrame)", b.Path, ErrNoSFrame)
	}
	if sec.Size > uint64(b.size) {
		return nil, openError(b.Path, ErrBadELF, ".sframe section of %d bytes is larger than the file", sec.Size)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, openError(b.Path, ErrBadELF, "reading .sframe: %v", err)
	}
	return &SFrameData{Addr: sec.Addr, Data: data, Section: true}, nil
}
