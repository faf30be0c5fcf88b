package gobin

import (
	"debug/elf"
	"os"
	"testing"
)

// TestAgainstSymtab checks the pclntab reading against the ELF symbol table
// of the test binary: every Go function symbol must be found at its address.
func TestAgainstSymtab(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	syms, err := b.ELF.Symbols()
	if err != nil {
		t.Skipf("no symbol table: %v", err)
	}
	checked := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		f := b.Func(s.Name)
		if f == nil {
			continue // C symbols, or symbols the pclntab names differently
		}
		if g := b.Lookup(s.Value); g == nil || g.Name != s.Name {
			t.Errorf("Lookup(%#x) = %v, want %s", s.Value, g, s.Name)
		}
		checked++
	}
	if checked < 1000 {
		t.Fatalf("only %d functions checked", checked)
	}
	for _, name := range []string{"runtime.mstart", "runtime.goexit", "runtime.rt0_go"} {
		f := b.Func(name)
		if f == nil || !f.TopFrame() || !f.Asm() {
			t.Errorf("%s: %+v, want TOPFRAME assembly", name, f)
		}
	}
	if f := b.Func("runtime.main"); f == nil || f.TopFrame() {
		t.Errorf("runtime.main: %+v", f)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("/nonexistent"); err == nil {
		t.Error("no error for a missing file")
	}
	if _, err := Open("/bin/sh"); err != ErrNotGo && (err == nil || !contains(err.Error(), "not a Go binary")) {
		t.Errorf("/bin/sh: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
