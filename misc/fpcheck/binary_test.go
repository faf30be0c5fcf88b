package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestBinaryBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text")
	os.WriteFile(text, []byte("hello, not an ELF file\n"), 0o644)
	// A minimal ELF header for RISC-V (machine 0xf3).
	riscv := filepath.Join(dir, "riscv")
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	h[16], h[18], h[20] = 2, 0xf3, 1
	h[52], h[54], h[58] = 64, 56, 64
	os.WriteFile(riscv, h, 0o644)
	// A truncated Go binary.
	self, _ := os.Executable()
	data, _ := os.ReadFile(self)
	trunc := filepath.Join(dir, "trunc")
	os.WriteFile(trunc, data[:4096], 0o644)
	for _, tc := range []struct{ file, want string }{
		{text, "not an ELF file"},
		{riscv, "unsupported architecture"},
		{trunc, "bad ELF file"},
		{filepath.Join(dir, "missing"), "no such file"},
		{"/bin/true", "not a Go binary"},
	} {
		code, stdout, stderr := fpcheck(t, "binary", tc.file)
		if code != exitFailure || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("fpcheck binary %s: exit %d, want 3 and one line with %q\n%s%s", tc.file, code, tc.want, stdout, stderr)
		}
	}
}

// TestBinaryUpstream checks that what upstream leaves open is named,
// in every build mode.
func TestBinaryUpstream(t *testing.T) {
	up := upstreamGo(t)
	type bin struct {
		name  string
		path  string
		wants []string
	}
	var bins []bin
	add := func(name, pkg string, env []string, wants []string, flags ...string) {
		bins = append(bins, bin{name, build(t, up, pkg, name, env, flags...), wants})
	}
	common := []string{"runtime.goexit+", "runtime.sigtramp+", "root: calls runtime.sigtrampgo"}
	add("hello", "./testdata/progs/hello", nil, append(common, "runtime.clone+", "stack-switch"))
	add("hello-stripped", "./testdata/progs/hello", nil, common, "-ldflags=-s -w")
	add("hello-pie", "./testdata/progs/hello", nil, common, "-buildmode=pie")
	add("hello-arm64", "./testdata/progs/hello", []string{"GOARCH=arm64"}, []string{"runtime.sigtramp+", "root: calls runtime.sigprofNonGo", "runtime.clone+", "runtime.goexit+"}, "-ldflags=-s -w")
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		cg := []string{"crosscall2+", "root: calls runtime.cgocallback", "runtime.cgocallback+", "stack-switch: calls an indirect target on a new stack"}
		add("cgocb", "./testdata/progs/cgocb", nil, append(cg, common...))
		add("cgocb-stripped", "./testdata/progs/cgocb", nil, cg, "-ldflags=-s -w")
	}
	for _, b := range bins {
		code, stdout, stderr := fpcheck(t, "binary", b.path)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s%s", b.name, code, stdout, stderr)
			continue
		}
		for _, w := range b.wants {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: report lacks %q\n%s", b.name, w, stdout)
			}
		}
		for _, ok := range []string{"ok     runtime.mstart", "ok     runtime.rt0_go"} {
			if !strings.Contains(stdout, ok) {
				t.Errorf("%s: report lacks %q (upstream clears the frame pointer there)\n%s", b.name, ok, stdout)
			}
		}
	}
}

// TestBinaryThisToolchain reports on binaries of the toolchain under test.
// Whether they are clean depends on the boundary fixes being in; the report
// must name the roots either way.
func TestBinaryThisToolchain(t *testing.T) {
	bins := map[string]string{
		"hello":       build(t, goTool(), "./testdata/progs/hello", "hello", nil),
		"hello-arm64": build(t, goTool(), "./testdata/progs/hello", "hello-arm64", []string{"GOARCH=arm64"}),
	}
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		bins["cgocb"] = build(t, goTool(), "./testdata/progs/cgocb", "cgocb", nil)
	}
	for name, path := range bins {
		code, stdout, stderr := fpcheck(t, "binary", path)
		if code != 0 && code != 1 {
			t.Errorf("%s: exit %d\n%s%s", name, code, stdout, stderr)
		} else if code != 0 && isFork() {
			t.Errorf("%s: fpcheck binary finds violations in a binary built by the fork (%s)\n%s", name, runtime.Version(), stdout)
		}
		for _, w := range []string{"runtime.mstart", "runtime.rt0_go", "runtime.goexit", "runtime.sigtramp"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: report does not list %s\n%s", name, w, stdout)
			}
		}
		t.Logf("%s (exit %d):\n%s", name, code, stdout)
	}
}

// TestBinaryNoSectionHeaders: with no symbol table and no section headers
// the pclntab is found by its magic, and the report is unchanged.
func TestBinaryNoSectionHeaders(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		bin := build(t, goTool(), "./testdata/progs/hello", "hello-"+arch, []string{"GOARCH=" + arch}, "-ldflags=-s -w")
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		// e_shoff, e_shnum, e_shstrndx of an ELF64 header.
		for i := 0x28; i < 0x30; i++ {
			data[i] = 0
		}
		data[0x3c], data[0x3d], data[0x3e], data[0x3f] = 0, 0, 0, 0
		noshdr := bin + ".noshdr"
		if err := os.WriteFile(noshdr, data, 0o755); err != nil {
			t.Fatal(err)
		}
		c1, out1, e1 := fpcheck(t, "binary", bin)
		c2, out2, e2 := fpcheck(t, "binary", noshdr)
		out2 = strings.ReplaceAll(out2, noshdr, bin)
		if c1 != c2 || out1 != out2 || c1 == 2 {
			t.Errorf("%s: with section headers: exit %d\n%s%s\nwithout: exit %d\n%s%s", arch, c1, out1, e1, c2, out2, e2)
		}
	}
}

// TestBinarySeveral: each file is reported; a bad one makes the exit a
// failure whatever the others found, with one line for it on stderr.
func TestBinarySeveral(t *testing.T) {
	up := reproducible(t, "./testdata/progs/hello", "hello", "amd64") // has findings
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		files []string
		want  int
	}{
		{[]string{up, up}, exitFindings},
		{[]string{up, missing}, exitFailure},
		{[]string{missing, up}, exitFailure},
	} {
		code, stdout, stderr := fpcheck(t, append([]string{"binary"}, tc.files...)...)
		if code != tc.want || strings.Count(stdout, up+": amd64") != strings.Count(strings.Join(tc.files, " "), up) {
			t.Errorf("fpcheck binary %v: exit %d, want %d, and a report per readable file\n%s%s", tc.files, code, tc.want, stdout, stderr)
		}
		if want := strings.Count(strings.Join(tc.files, " "), missing); strings.Count(stderr, "\n") != want || strings.Count(stderr, "fpcheck: ") != want {
			t.Errorf("fpcheck binary %v: stderr should have one line per bad file:\n%s", tc.files, stderr)
		}
	}
}
