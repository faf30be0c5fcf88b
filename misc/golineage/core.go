package main

import (
	"errors"
	"fmt"
	"io"

	"fpsafe.dev/misc/golineage/internal/target"
	"fpsafe.dev/misc/internal/gobin"
)

// openCore opens a core file and the executable it came from.
func openCore(corePath, exe string, native bool, stderr io.Writer) (*snapshot, func(), error) {
	bin, err := gobin.Open(exe)
	if err != nil {
		if errors.Is(err, gobin.ErrNotGo) {
			return nil, nil, fmt.Errorf("%s is not a Go program: %v", exe, err)
		}
		return nil, nil, err
	}
	abi, err := findABI(bin, native)
	if err != nil {
		bin.Close()
		return nil, nil, err
	}
	c, err := target.OpenCore(corePath, bin.ELF.Machine)
	if err != nil {
		bin.Close()
		return nil, nil, err
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(stderr, "golineage: warning: %s\n", w)
	}
	closer := func() { c.Close(); bin.Close() }
	bias, err := target.LoadBias(c.Auxv, bin.Entry, bin.PIE)
	if err != nil {
		closer()
		return nil, nil, fmt.Errorf("%s: %v", corePath, err)
	}
	if e, ok := target.AuxvEntry(c.Auxv); ok && e-bias != bin.Entry {
		closer()
		return nil, nil, fmt.Errorf("%s was not dumped from %s (entry point %#x, the executable's is %#x)", corePath, exe, e-bias, bin.Entry)
	}
	if err := sameBuild(c, bin, bias); err != nil {
		closer()
		return nil, nil, fmt.Errorf("%s was not dumped from %s: %v", corePath, exe, err)
	}
	c.SetExe(bin, bias)
	return &snapshot{bin: bin, bias: bias, threads: c.Threads, mem: target.NewCachedMem(c), abi: abi, warnings: c.Warnings}, closer, nil
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
