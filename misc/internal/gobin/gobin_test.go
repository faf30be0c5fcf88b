package gobin

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// buildVariant builds testdata/symprog with extra go build flags.
func buildVariant(t *testing.T, name string, env []string, flags ...string) string {
	t.Helper()
	return buildProg(t, "./testdata/symprog", name, env, flags...)
}

// buildProg builds the package dir with the go command running the tests.
func buildProg(t testing.TB, dir, name string, env []string, flags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), name)
	args := append([]string{"build", "-o", exe}, flags...)
	args = append(args, dir)
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", flags, err, out)
	}
	return exe
}

type stackRec struct {
	pcs     []uint64
	entries map[uint64]string // pc -> "entry name"
	frames  []string
}

func parseSymprog(t *testing.T, out []byte) []stackRec {
	var recs []stackRec
	sc := bufio.NewScanner(bytes.NewReader(out))
	var last uint64
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch f[0] {
		case "stack":
			recs = append(recs, stackRec{entries: map[uint64]string{}})
		case "pc":
			last, _ = strconv.ParseUint(f[1], 16, 64)
			r := &recs[len(recs)-1]
			r.pcs = append(r.pcs, last)
		case "entry":
			recs[len(recs)-1].entries[last] = f[1] + " " + f[2]
		case "frame":
			recs[len(recs)-1].frames = append(recs[len(recs)-1].frames, strings.Join(f[1:], " "))
		}
	}
	if len(recs) < 4 {
		t.Fatalf("symprog printed %d stacks, want at least 4:\n%s", len(recs), out)
	}
	return recs
}

func TestSymbolizeMatchesRuntime(t *testing.T) {
	variants := []struct {
		name  string
		env   []string
		flags []string
	}{
		{"plain", nil, nil},
		{"stripped", nil, []string{"-ldflags=-s -w"}},
		{"pie-stripped", nil, []string{"-buildmode=pie", "-ldflags=-s -w"}},
		{"external-stripped", []string{"CGO_ENABLED=1"}, []string{"-ldflags=-s -w -linkmode=external"}},
		{"no-section-headers", nil, []string{"-ldflags=-s -w"}},
		{"pie-no-section-headers", nil, []string{"-buildmode=pie", "-ldflags=-s -w"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if strings.Contains(v.name, "external") {
				if _, err := exec.LookPath("gcc"); err != nil {
					t.Skip("external linking needs gcc, which is not installed")
				}
			}
			exe := buildVariant(t, v.name, v.env, v.flags...)
			if strings.HasSuffix(v.name, "no-section-headers") {
				dropSectionHeaders(t, exe)
			}
			out, err := exec.Command(exe).Output()
			if err != nil {
				t.Fatal(err)
			}
			b, err := Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !b.InlineExpansion() {
				t.Fatal("inline expansion unavailable")
			}
			bias := uint64(0)
			if b.PIE {
				// A PIE's runtime PCs are biased; recover the bias from one
				// known entry (runtime.FuncForPC(...).Entry()).
				bias = pieBias(t, b, out)
			}
			inlined := 0
			for si, r := range parseSymprog(t, out) {
				var got []string
				for i := 0; i < len(r.pcs); {
					pc := r.pcs[i] - bias
					fr := b.Frames(pc, true)
					if len(fr) == 0 {
						t.Fatalf("stack %d: no frames for pc %#x", si, pc)
					}
					phys := fr[len(fr)-1]
					if want, ok := r.entries[r.pcs[i]]; ok && !strings.HasPrefix(want, fmt.Sprintf("%x ", phys.Entry+bias)) {
						t.Errorf("stack %d pc %#x: entry %#x, runtime says %s", si, pc, phys.Entry+bias, want)
					}
					for _, f := range fr {
						got = append(got, fmt.Sprintf("%s %s %d", PrintName(f.Func), f.File, f.Line))
						if f.Inlined {
							inlined++
						}
					}
					i += len(fr) // runtime.Callers emitted one PC per logical frame
				}
				if strings.Join(got, "\n") != strings.Join(r.frames, "\n") {
					t.Errorf("stack %d differs\ngot:\n%s\nruntime.CallersFrames:\n%s", si, strings.Join(got, "\n"), strings.Join(r.frames, "\n"))
				}
			}
			if inlined < 4 {
				t.Errorf("only %d inlined frames seen; the fixture should exercise inlining", inlined)
			}
		})
	}
}

// dropSectionHeaders clears the ELF header's section header table fields,
// as tools that strip binaries hard do: only program headers remain.
func dropSectionHeaders(t *testing.T, exe string) {
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	const eShoff, eShnum, eShstrndx = 0x28, 0x3c, 0x3e
	clear(data[eShoff : eShoff+8])
	clear(data[eShnum : eShnum+2])
	clear(data[eShstrndx : eShstrndx+2])
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Sections) > 0 {
		t.Fatalf("%s still has %d sections", exe, len(f.Sections))
	}
}

func pieBias(t *testing.T, b *Binary, out []byte) uint64 {
	i := bytes.Index(out, []byte("mainpc "))
	if i < 0 {
		t.Fatal("symprog did not print mainpc")
	}
	pc, _ := strconv.ParseUint(strings.Fields(string(out[i+7:]))[0], 16, 64)
	f := b.LookupFunc("main.main")
	if f == nil {
		t.Fatal("main.main not in function table")
	}
	return pc - f.Entry
}

// TestOpenErrors checks the error vocabulary: each bad input gives one line
// that wraps its kind.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("this is not an ELF file at all"), 0o644)
	// A minimal ELF header for RISC-V (machine 0xf3).
	riscv := filepath.Join(dir, "riscv")
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	h[16], h[18], h[20] = 2, 0xf3, 1
	h[52], h[54], h[58] = 64, 56, 64
	os.WriteFile(riscv, h, 0o644)
	self, _ := os.Executable()
	data, _ := os.ReadFile(self)
	trunc := filepath.Join(dir, "trunc")
	os.WriteFile(trunc, data[:4096], 0o644)
	for _, tc := range []struct {
		file string
		kind error
		want string
	}{
		{"/bin/sh", ErrNoPclntab, "not a Go binary: no Go pclntab"},
		{junk, ErrNotELF, "not a Go binary: not an ELF file"},
		{riscv, ErrUnsupported, "unsupported architecture"},
		{trunc, ErrBadELF, "bad ELF file"},
	} {
		_, err := Open(tc.file)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Open(%s) = %v, want one line wrapping %v", tc.file, err, tc.kind)
		}
		if (tc.kind == ErrNotELF || tc.kind == ErrNoPclntab) != errors.Is(err, ErrNotGo) {
			t.Errorf("Open(%s) = %v: ErrNotGo wrapped wrongly", tc.file, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestAgainstSymtab checks the function table against the ELF symbol table
// of the test binary: every Go function symbol must be found at its address,
// and the runtime's entry points carry their flags.
func TestAgainstSymtab(t *testing.T) {
	b, err := Open(buildVariant(t, "plain", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	syms, err := b.ELF.Symbols()
	if err != nil {
		t.Fatalf("no symbol table: %v", err)
	}
	checked := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || b.LookupFunc(s.Name) == nil {
			continue // C symbols, or symbols the pclntab names differently
		}
		if g := b.FindFunc(s.Value); g == nil || g.Name != s.Name || g.Entry != s.Value {
			t.Errorf("FindFunc(%#x) = %v, want %s", s.Value, g, s.Name)
		}
		checked++
	}
	if checked < 1000 {
		t.Fatalf("only %d functions checked", checked)
	}
	for _, name := range []string{"runtime.mstart", "runtime.goexit", "runtime.rt0_go"} {
		f := b.LookupFunc(name)
		if f == nil || !f.TopFrame() || !f.Asm() {
			t.Errorf("%s: %+v, want TOPFRAME assembly", name, f)
		}
	}
	if f := b.LookupFunc("runtime.main"); f == nil || f.TopFrame() || f.Asm() {
		t.Errorf("runtime.main: %+v", f)
	}
	if f := b.LookupFunc("runtime.systemstack"); f == nil || !f.SPWrite() {
		t.Errorf("runtime.systemstack: %+v, want SPWRITE", f)
	}
	if first, last := b.Funcs[0], b.Funcs[len(b.Funcs)-1]; first.Entry != b.Text || last.End > b.Etext {
		t.Errorf("functions span [%#x, %#x), outside the module data's text [%#x, %#x)", first.Entry, last.End, b.Text, b.Etext)
	}
	for i := 1; i < len(b.Funcs); i++ {
		if f := &b.Funcs[i-1]; f.End != b.Funcs[i].Entry || f.End < f.Entry {
			t.Fatalf("function %d (%s) ends at %#x, next starts at %#x", i-1, f.Name, f.End, b.Funcs[i].Entry)
		}
	}
}

func TestPrintName(t *testing.T) {
	for in, want := range map[string]string{
		"main.f":                                  "main.f",
		"main.generic[go.shape.int]":              "main.generic[...]",
		"main.G[go.shape.string].gm":              "main.G[...].gm",
		"main.G[go.shape.int].m[go.shape.string]": "main.G[...].m[...]",
		"main.f[[]int]":                           "main.f[...]",
	} {
		if got := PrintName(in); got != want {
			t.Errorf("PrintName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenMapped: a binary opened with its pclntab mapped reads as the
// one opened by Open, and its pclntab is not in the heap.
func TestOpenMapped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m, err := OpenMapped(exe)
	if err != nil {
		t.Fatal(err)
	}
	if m.mapped == nil {
		t.Fatal("OpenMapped did not map the file")
	}
	if len(a.Funcs) != len(m.Funcs) || a.Text != m.Text || a.ModuleData != m.ModuleData {
		t.Fatalf("mapped: %d funcs, text %#x, moduledata %#x; read: %d, %#x, %#x", len(m.Funcs), m.Text, m.ModuleData, len(a.Funcs), a.Text, a.ModuleData)
	}
	for i := 0; i < len(a.Funcs); i += 97 {
		fa, fm := &a.Funcs[i], &m.Funcs[i]
		if fa.Name != fm.Name || fa.Entry != fm.Entry {
			t.Fatalf("func %d: %s at %#x mapped, %s at %#x read", i, fm.Name, fm.Entry, fa.Name, fa.Entry)
		}
		if fa.SPDelta(fa.Entry+1) != fm.SPDelta(fm.Entry+1) {
			t.Fatalf("%s: SP delta differs", fa.Name)
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := OpenMapped("/nonexistent"); err == nil {
		t.Error("OpenMapped of a missing file succeeded")
	}
	if _, err := OpenMapped("/dev/null"); err == nil {
		t.Error("OpenMapped of /dev/null succeeded")
	}
}
