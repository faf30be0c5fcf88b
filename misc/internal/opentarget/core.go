// Package opentarget opens a fork-built Go program's executable for the
// repository's readers (the lineage SDK, golineage): a live process's, with
// its load bias and lineage header, or one with the core dumped from it.
package opentarget

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

// OpenCore opens core file path, dumped from e, and sets e.Bias. abi is e's
// lineage header, nil to read native stacks only. It refuses a core of
// another build.
func (e *Exe) OpenCore(path string, abi *lineageabi.ABI) (*target.Core, error) {
	bin := e.Bin
	c, err := target.OpenCore(path, bin.ELF.Machine)
	if err != nil {
		return nil, err
	}
	bias, err := coreBias(c, bin, abi)
	if err != nil {
		return c, &CoreError{Core: c, Err: fmt.Errorf("%s: %v", path, err)}
	}
	if entry, ok := target.AuxvEntry(c.Auxv); ok && entry-bias != bin.Entry {
		c.Close()
		return nil, fmt.Errorf("%s was not dumped from %s (entry point %#x, the executable's is %#x)", path, bin.Path, entry-bias, bin.Entry)
	}
	if err := sameBuild(c, bin, bias); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s was not dumped from %s: %v", path, bin.Path, err)
	}
	c.SetExe(bin, bias)
	e.Bias = bias
	return c, nil
}

// CoreError is a core whose load bias cannot be found; Core is still open
// (its Damage says what it lost) and the caller closes it.
type CoreError struct {
	Core *target.Core
	Err  error
}

func (e *CoreError) Error() string { return e.Err.Error() }
func (e *CoreError) Unwrap() error { return e.Err }

// coreBias is the executable's load bias in core c: from AT_ENTRY in its
// NT_AUXV note, or 0 for a position-dependent executable. A core that lost
// its notes (gcore writes them last) has no auxiliary vector; then a
// position-independent executable's bias is the one at which the lineage
// header is where its self field says it is, or, without the ABI, the one
// at which the core holds the executable's first page (its ELF header).
func coreBias(c *target.Core, bin *gobin.Binary, abi *lineageabi.ABI) (uint64, error) {
	if c.Auxv != nil || !bin.PIE {
		return target.LoadBias(c.Auxv, bin.Entry, bin.PIE)
	}
	first := make([]byte, 64)
	var firstVA uint64
	haveFirst := false
	for _, p := range bin.ELF.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 && p.Filesz >= uint64(len(first)) {
			if _, err := p.ReadAt(first, 0); err == nil {
				firstVA, haveFirst = p.Vaddr, true
			}
			break
		}
	}
	for _, start := range c.SegmentStarts() {
		for _, p := range bin.ELF.Progs {
			if p.Type != elf.PT_LOAD || start < p.Vaddr&^0xfff {
				continue
			}
			bias := start - p.Vaddr&^0xfff
			if bias%0x1000 != 0 {
				continue
			}
			if abi != nil && abi.At(c, bias) {
				return bias, nil
			}
			if abi == nil && haveFirst {
				if b, ok := c.Dumped(firstVA+bias, len(first)); ok && bytes.Equal(b, first) {
					return bias, nil
				}
			}
		}
	}
	return 0, errors.New("the core has no auxiliary vector (its notes were lost) and the load bias of this position-independent executable could not be found in it")
}

// sameBuild compares the executable's build-id notes with the copy the core
// holds (kernel cores keep the first page of each ELF mapping), so a core of
// another build is refused instead of misread.
func sameBuild(c *target.Core, bin *gobin.Binary, bias uint64) error {
	for _, name := range []string{".note.go.buildid", ".note.gnu.build-id"} {
		s := bin.ELF.Section(name)
		if s == nil || s.Size == 0 || s.Size > 4096 {
			continue
		}
		want, err := s.Data()
		if err != nil {
			continue
		}
		got, ok := c.Dumped(s.Addr+bias, len(want))
		if ok && string(got) != string(want) {
			return fmt.Errorf("build IDs differ (%s)", name)
		}
	}
	return nil
}
