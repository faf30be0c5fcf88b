// Package gobintest serves the tests of the tools built on package gobin:
// it opens the test binary itself, and damages Go executables the way
// issue 16's fuzzing did (each tool must answer the same damaged file with
// the same one line).
package gobintest

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"fpsafe.dev/misc/internal/gobin"
)

// OpenSelf opens the running test binary; it is closed when the test ends.
func OpenSelf(t testing.TB) *gobin.Binary {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := gobin.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bin.Close() })
	return bin
}

// pcHeader.pclnOffset (runtime/symtab.go): the function table's offset from
// the header, the header's eighth word after its 8-byte prefix.
const (
	pclnOffsetField = 8 + 7*8
	functabEntry    = 8 // functab{entryoff, funcoff uint32}
)

// WantEndBeforeEntry is the error every tool gives, after its own prefix
// and the file name, for a file damaged by EndBeforeEntry.
const WantEndBeforeEntry = "corrupt Go pclntab: function 1 ends at text+0x0, before its entry"

// EndBeforeEntry copies the executable src to dst and sets the entry of its
// third function to the start of the text, so that the second function ends
// before it begins.
func EndBeforeEntry(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := elf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	s := f.Section(".gopclntab")
	if s == nil {
		return fmt.Errorf("%s: no .gopclntab section", src)
	}
	tab := data[s.Offset:]
	pcln := binary.LittleEndian.Uint64(tab[pclnOffsetField:])
	binary.LittleEndian.PutUint32(tab[pcln+2*functabEntry:], 0)
	return os.WriteFile(dst, data, 0o755)
}
