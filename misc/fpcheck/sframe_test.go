package main

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"fpsafe.dev/misc/fpcheck/internal/sframecheck"
	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/golden"
	"fpsafe.dev/misc/internal/sframe"
	"fpsafe.dev/misc/internal/sframe/sframetest"
)

// Until the linker writes .sframe, these tests stand in for it: they encode
// a section from a built binary's pclntab and frame model
// (sframecheck.Model) with the hand encoder sframetest, and append it to a
// copy of the binary behind a PT_GNU_SFRAME program header. That exercises
// the reader and the report; the planted errors show that a wrong rule, a
// gap and a missing mark are each found.

// encodeFromPclntab returns b's functions as SFrame rows, one FDE per
// function, rows where the model changes.
func encodeFromPclntab(t *testing.T, b *gobin.Binary) sframetest.Section {
	t.Helper()
	s := sframetest.Section{Flags: sframe.FlagFDESorted | sframe.FlagFuncStartPCRel}
	if b.Arch == "arm64" {
		s.ABI = sframe.ABIAArch64LE
	} else {
		s.ABI, s.FixedRA = sframe.ABIAMD64LE, -8
	}
	for i := range b.Funcs {
		f := &b.Funcs[i]
		m, ok := sframecheck.NewModel(b, f)
		if !ok {
			t.Fatalf("%s: SP-delta table unreadable", f.Name)
		}
		fn := sframetest.Func{Start: f.Entry, Size: uint32(f.End - f.Entry), FREType: freType(f.End - f.Entry),
			Signal: slices.Contains(fpchain.SignalEntries, f.Name)}
		root := slices.Contains(fpchain.StackRoots, f.Name) || strings.HasPrefix(f.Name, "_rt0_"+b.Arch) && !strings.HasSuffix(f.Name, "_lib")
		for pc := f.Entry; pc < f.End; pc += b.Quantum {
			var words []int32
			if e := m.At(pc); !root && e.RAReg == "" {
				words = modelWords(b.Arch, e)
			}
			if n := len(fn.Rows); n > 0 && slices.Equal(fn.Rows[n-1].Words, words) {
				continue
			}
			fn.Rows = append(fn.Rows, sframetest.Row{Start: uint32(pc - f.Entry), Base: sframe.BaseSP, Size: wordSize(words), Words: words})
		}
		s.Funcs = append(s.Funcs, fn)
	}
	return s
}

// modelWords is the default FDE's data words for e.
func modelWords(arch string, e sframecheck.Expected) []int32 {
	w := []int32{e.CFA}
	if arch == "arm64" {
		if e.RASaved {
			w = append(w, e.RA)
		}
		if e.FPSaved {
			w = append(w, e.FP)
		}
		return w
	}
	if e.FPSaved {
		w = append(w, e.FP)
	}
	return w
}

func freType(size uint64) uint8 {
	switch {
	case size <= 0xff:
		return sframe.FRETypeAddr1
	case size <= 0xffff:
		return sframe.FRETypeAddr2
	}
	return sframe.FRETypeAddr4
}

func wordSize(words []int32) int {
	size := 1
	for _, w := range words {
		if w != int32(int8(w)) {
			size = max(size, 2)
		}
		if w != int32(int16(w)) {
			size = 4
		}
	}
	return size
}

// withSFrame writes a copy of the executable src to dst with section s
// appended after the file's contents, at an address above every segment,
// behind a PT_GNU_SFRAME program header: the linker's own, or one that
// replaces PT_GNU_STACK (the checker does not run the file).
func withSFrame(t *testing.T, src, dst string, s sframetest.Section) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var top uint64
	stack := -1
	for i, p := range f.Progs {
		top = max(top, p.Vaddr+p.Memsz)
		// Reuse the linker's own PT_GNU_SFRAME if it wrote one, so that
		// the test's table is the only one.
		if p.Type == gobin.PTGNUSFrame || p.Type == elf.PT_GNU_STACK && (stack < 0 || f.Progs[stack].Type != gobin.PTGNUSFrame) {
			stack = i
		}
	}
	if stack < 0 {
		t.Fatalf("%s: no PT_GNU_SFRAME or PT_GNU_STACK program header to reuse", src)
	}
	off := uint64(len(data)+7) &^ 7
	s.Addr = (top + 0xfff) &^ 0xfff
	sec := s.Encode()
	data = append(data, make([]byte, off-uint64(len(data)))...)
	data = append(data, sec...)
	le := binary.LittleEndian
	phoff, phentsize := le.Uint64(data[0x20:]), uint64(le.Uint16(data[0x36:])) // e_phoff, e_phentsize
	ph := data[phoff+uint64(stack)*phentsize:]
	le.PutUint32(ph[0:], uint32(gobin.PTGNUSFrame))
	le.PutUint32(ph[4:], uint32(elf.PF_R))
	le.PutUint64(ph[8:], off)               // p_offset
	le.PutUint64(ph[16:], s.Addr)           // p_vaddr
	le.PutUint64(ph[24:], s.Addr)           // p_paddr
	le.PutUint64(ph[32:], uint64(len(sec))) // p_filesz
	le.PutUint64(ph[40:], uint64(len(sec))) // p_memsz
	le.PutUint64(ph[48:], 8)                // p_align
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func openBinary(t *testing.T, path string) *gobin.Binary {
	t.Helper()
	b, err := gobin.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// funcIndex returns the index of the FDE of the function named name.
func funcIndex(t *testing.T, b *gobin.Binary, s sframetest.Section, name string) int {
	t.Helper()
	f := b.LookupFunc(name)
	if f == nil {
		t.Fatalf("no function %s", name)
	}
	i := slices.IndexFunc(s.Funcs, func(fn sframetest.Func) bool { return fn.Start == f.Entry })
	if i < 0 {
		t.Fatalf("no FDE for %s", name)
	}
	return i
}

// plantErrors edits a section encoded from the pclntab so that the
// checker has one of each finding to report.
func plantErrors(t *testing.T, b *gobin.Binary, s *sframetest.Section) {
	// main.main: no FDE at all.
	i := funcIndex(t, b, *s, "main.main")
	s.Funcs = slices.Delete(s.Funcs, i, i+1)
	// runtime.main: the CFA 8 bytes off wherever the frame is allocated.
	fn := &s.Funcs[funcIndex(t, b, *s, "runtime.main")]
	for j := range fn.Rows {
		if w := fn.Rows[j].Words; len(w) > 1 {
			fn.Rows[j].Words = append([]int32{w[0] + 8}, w[1:]...)
		}
	}
	// runtime.goexit: an ordinary frame instead of outermost.
	fn = &s.Funcs[funcIndex(t, b, *s, "runtime.goexit")]
	fn.Rows = []sframetest.Row{{Base: sframe.BaseSP, Words: modelWords(b.Arch, sframecheck.Expected{CFA: 8, RASaved: true, RA: -8})}}
	// runtime.sigtramp: no signal-trampoline bit.
	s.Funcs[funcIndex(t, b, *s, "runtime.sigtramp")].Signal = false
	// fmt.Fprintln: the last row (after the epilogue) claims the frame
	// pointer still saved (amd64), or the return address saved (arm64).
	fn = &s.Funcs[funcIndex(t, b, *s, "fmt.Fprintln")]
	last := &fn.Rows[len(fn.Rows)-1]
	last.Words = append(slices.Clone(last.Words), -16)
}

// TestSFrameFake checks a fork-built binary with a section encoded from its
// own pclntab: every PC covered, no disagreement, every mark in place.
func TestSFrameFake(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			bin := build(t, goTool(), "./testdata/progs/hello", "hello", []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch})
			fake := filepath.Join(t.TempDir(), "hello-sframe")
			withSFrame(t, bin, fake, encodeFromPclntab(t, openBinary(t, bin)))
			code, stdout, stderr := fpcheck(t, "sframe", fake)
			if code != exitClean || !strings.Contains(stdout, " 0 without coverage (0 range(s)), 0 disagreeing") {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			for _, want := range []string{"ok   runtime.goexit", "ok   runtime.sigtramp", "PT_GNU_SFRAME segment (no .sframe section header)"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("report lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// joinFDEs returns s with the FDE at i taking in the next one, as the
// linker joins a function whose first rule is the one its predecessor
// ends with: the size runs to the next FDE's end and its rows follow,
// less the first.
func joinFDEs(s sframetest.Section, i int) sframetest.Section {
	s.Funcs = slices.Clone(s.Funcs)
	fn, next := s.Funcs[i], s.Funcs[i+1]
	fn.Rows = slices.Clone(fn.Rows)
	for _, r := range next.Rows[1:] {
		r.Start += uint32(next.Start - fn.Start)
		fn.Rows = append(fn.Rows, r)
	}
	fn.Size = uint32(next.Start-fn.Start) + next.Size
	fn.FREType = freType(uint64(fn.Size))
	s.Funcs[i] = fn
	s.Funcs = slices.Delete(s.Funcs, i+1, i+2)
	return s
}

// TestSFrameJoinedFDEs checks FDEs that cover more than one function, as
// the linker writes them (doc/sframe.md, "Encoding"): one taking in the
// function after it agrees everywhere; one that ends inside a function,
// or starts where no function does, is reported.
func TestSFrameJoinedFDEs(t *testing.T) {
	bin := build(t, goTool(), "./testdata/progs/hello", "hello", []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-ldflags=-sframe=false"})
	b := openBinary(t, bin)
	s := encodeFromPclntab(t, b)
	// Two functions of fmt, the second starting with the rule the first
	// ends with (every function with a frame does).
	i := -1
	for j := range len(s.Funcs) - 1 {
		fn, next := &s.Funcs[j], &s.Funcs[j+1]
		if strings.HasPrefix(b.FindFunc(fn.Start).Name, "fmt.") && len(fn.Rows) > 2 && len(next.Rows) > 2 &&
			slices.Equal(next.Rows[0].Words, fn.Rows[len(fn.Rows)-1].Words) {
			i = j
			break
		}
	}
	if i < 0 {
		t.Fatal("no two functions of fmt to join")
	}
	next := b.FindFunc(s.Funcs[i+1].Start)

	for _, tc := range []struct {
		name string
		edit func(sframetest.Section) sframetest.Section
		want string
	}{
		{"joined", func(s sframetest.Section) sframetest.Section { return joinFDEs(s, i) }, ""},
		{"ends inside the next function", func(s sframetest.Section) sframetest.Section {
			end := uint32(s.Funcs[i+1].Start-s.Funcs[i].Start) + s.Funcs[i+1].Rows[1].Start
			s = joinFDEs(s, i)
			fn := &s.Funcs[i]
			fn.Size = end
			fn.Rows = slices.DeleteFunc(slices.Clone(fn.Rows), func(r sframetest.Row) bool { return r.Start >= end })
			return s
		}, next.Name + "+0x0"},
		{"starts inside the first function", func(s sframetest.Section) sframetest.Section {
			s = joinFDEs(s, i)
			fn := &s.Funcs[i]
			skip := fn.Rows[1].Start
			fn.Start += uint64(skip)
			fn.Size -= skip
			fn.Rows = slices.Clone(fn.Rows[1:])
			for j := range fn.Rows {
				fn.Rows[j].Start -= skip
			}
			return s
		}, next.Name + "+0x0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := filepath.Join(t.TempDir(), "hello-sframe")
			withSFrame(t, bin, fake, tc.edit(s))
			code, stdout, stderr := fpcheck(t, "sframe", fake)
			clean := strings.Contains(stdout, " 0 disagreeing")
			switch {
			case tc.want == "" && (code != exitClean || !clean):
				t.Errorf("exit %d\n%s%s", code, stdout, stderr)
			case tc.want != "" && (clean || !strings.Contains(stdout, tc.want+" ") || !strings.Contains(stdout, "does not match the function's code")):
				t.Errorf("want a disagreement at %s about the FDE:\n%s%s", tc.want, stdout, stderr)
			}
		})
	}
}

// TestSFrameRegisterRules checks the two rules fpcheck takes from what an
// instruction does rather than from the function's name, with the rows an
// earlier linker wrote planted: arm64 asyncPreempt's RET (R27) described
// with the return address in LR, and a c-shared library's _rt0_amd64_lib,
// which saves the host's BP with MOVQ BP, 40(SP) and then overwrites the
// register, with the frame pointer left untracked.
func TestSFrameRegisterRules(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, fn, want string
		env, flags          []string
	}{
		{"asyncPreempt-arm64", "./testdata/progs/hello", "runtime.asyncPreempt",
			"which no rule can name: want outermost", []string{"CGO_ENABLED=0", "GOARCH=arm64"}, nil},
		{"rt0-lib-amd64", "./testdata/progs/cgocb", "_rt0_amd64_lib",
			"FP untracked, but the register", []string{"CGO_ENABLED=1", "GOARCH=amd64"}, []string{"-buildmode=c-shared"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if slices.Contains(tc.env, "CGO_ENABLED=1") {
				if _, err := exec.LookPath("gcc"); err != nil {
					t.Skipf("skipping: %v", err)
				}
			}
			bin := build(t, goTool(), tc.pkg, tc.name, append([]string{"GOOS=linux"}, tc.env...), tc.flags...)
			b := openBinary(t, bin)
			s := encodeFromPclntab(t, b)
			fake := filepath.Join(t.TempDir(), "fake")
			withSFrame(t, bin, fake, s)
			if code, stdout, stderr := fpcheck(t, "sframe", fake); code != exitClean {
				t.Fatalf("the model's own rows: exit %d, want 0\n%s%s", code, stdout, stderr)
			}
			fn := &s.Funcs[funcIndex(t, b, s, tc.fn)]
			// The earlier linker's rows: no outermost row, no FP word.
			var rows []sframetest.Row
			for _, r := range fn.Rows {
				if len(r.Words) == 0 {
					continue
				}
				if b.Arch == "amd64" {
					r.Words = r.Words[:1]
				}
				if n := len(rows); n > 0 && slices.Equal(rows[n-1].Words, r.Words) {
					continue
				}
				rows = append(rows, r)
			}
			fn.Rows = rows
			withSFrame(t, bin, fake, s)
			code, stdout, stderr := fpcheck(t, "sframe", fake)
			if code != exitFindings || !strings.Contains(stdout, tc.fn+"+") || !strings.Contains(stdout, tc.want) {
				t.Errorf("planted rows: exit %d, want %d and a finding in %s containing %q\n%s%s", code, exitFindings, tc.fn, tc.want, stdout, stderr)
			}
		})
	}
}

// TestGoldenSFrame checks the reports of a binary built by upstream
// upstream (reproducibly) with a section from its pclntab and the planted
// errors, as text and JSON, as text for arm64, and the detail of one
// function (-d).
func TestGoldenSFrame(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		flags      []string
		code       int
	}{
		{"sframe-planted", "amd64", []string{"-n", "10"}, exitFindings},
		{"sframe-planted-json", "amd64", []string{"-json", "-n", "3"}, exitFindings},
		{"sframe-planted-arm64", "arm64", []string{"-n", "10"}, exitFindings},
		{"sframe-planted-d", "amd64", []string{"-d", "runtime.goexit"}, exitClean},
	} {
		bin := reproducible(t, "./testdata/progs/hello", "hello", tc.arch)
		b := openBinary(t, bin)
		s := encodeFromPclntab(t, b)
		plantErrors(t, b, &s)
		fake := filepath.Join(t.TempDir(), "hello-sframe")
		withSFrame(t, bin, fake, s)
		code, stdout, stderr := fpcheck(t, append(append([]string{"sframe"}, tc.flags...), fake)...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.code)
		}
		golden.Check(t, tc.name, strings.ReplaceAll(streams(code, stdout, stderr), fake, "hello-sframe"))
	}
}

// TestSFrameBadInput: no table, a table that does not decode, and a table
// of the wrong ABI each give one line and exit 3.
func TestSFrameBadInput(t *testing.T) {
	bin := reproducible(t, "./testdata/progs/hello", "hello", "amd64") // upstream Go writes no table
	b := openBinary(t, bin)
	dir := t.TempDir()
	corrupt := encodeFromPclntab(t, b)
	corrupt.Funcs[1].Rows[0].Words = []int32{1, 2, 3} // three words: too many on AMD64
	wrongABI := encodeFromPclntab(t, b)
	wrongABI.ABI, wrongABI.FixedRA = sframe.ABIAArch64LE, 0
	withSFrame(t, bin, filepath.Join(dir, "corrupt"), corrupt)
	withSFrame(t, bin, filepath.Join(dir, "abi"), wrongABI)
	for _, tc := range []struct{ path, want string }{
		{bin, "no SFrame unwind table: no PT_GNU_SFRAME segment and no .sframe section"},
		{filepath.Join(dir, "corrupt"), ".sframe: FDE 1 (function at "},
		{filepath.Join(dir, "abi"), ".sframe: corrupt .sframe section: ABI 2 in an amd64 binary"},
	} {
		code, stdout, stderr := fpcheck(t, "sframe", tc.path)
		if code != exitFailure || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 3 and one line with %q", tc.path, code, stdout, stderr, tc.want)
		}
	}
	if code, _, _ := fpcheck(t, "sframe"); code != exitUsage {
		t.Errorf("no file: exit %d, want %d", code, exitUsage)
	}
}

// TestSFrameSectionOnly: a table in a section named .sframe but in no
// PT_GNU_SFRAME segment is found, checked, and reported as a finding. The
// test renames the Go build-ID note to .sframe and writes into it a table
// for main.main alone, so the rest of the functions are reported uncovered.
func TestSFrameSectionOnly(t *testing.T) {
	bin := reproducible(t, "./testdata/progs/hello", "hello", "amd64") // no PT_GNU_SFRAME of its own
	b := openBinary(t, bin)
	s := encodeFromPclntab(t, b)
	s.Funcs = s.Funcs[funcIndex(t, b, s, "main.main"):][:1]
	note := b.ELF.Section(".note.go.buildid")
	if note == nil {
		t.Fatal("no .note.go.buildid section to rename")
	}
	s.Addr = note.Addr
	sec := s.Encode()
	if uint64(len(sec)) > note.Size {
		t.Fatalf("table of %d bytes does not fit in the %d-byte note", len(sec), note.Size)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	shoff, shentsize, shstrndx := le.Uint64(data[0x28:]), uint64(le.Uint16(data[0x3a:])), uint64(le.Uint16(data[0x3e:]))
	strtab := le.Uint64(data[shoff+shstrndx*shentsize+0x18:]) // the names' sh_offset
	for i, sh := range b.ELF.Sections {
		if sh == note {
			name := le.Uint32(data[shoff+uint64(i)*shentsize:])
			copy(data[strtab+uint64(name):], ".sframe\x00")
		}
	}
	copy(data[note.Offset:], sec)
	fake := filepath.Join(t.TempDir(), "hello-section")
	if err := os.WriteFile(fake, data, 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := fpcheck(t, "sframe", "-n", "1", fake)
	for _, want := range []string{"in a .sframe section only, in no PT_GNU_SFRAME segment", "FDEs: 1 (0 outside Go functions)", "without coverage (1 of "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if code != exitFindings {
		t.Errorf("exit %d, want %d\n%s", code, exitFindings, stderr)
	}
}

// TestSFrameToolchain checks the table the toolchain under test writes
// into its own binaries, pure Go and cgo (internally and externally
// linked), with nothing left out: every instruction covered, every rule
// agreeing, every mark in place. It skips for a toolchain that writes no
// table (upstream Go).
func TestSFrameToolchain(t *testing.T) {
	type prog struct {
		name, pkg string
		env       []string
		flags     []string
	}
	progs := []prog{
		{"hello-amd64", "./testdata/progs/hello", []string{"CGO_ENABLED=0", "GOARCH=amd64"}, nil},
		{"hello-arm64", "./testdata/progs/hello", []string{"CGO_ENABLED=0", "GOARCH=arm64"}, nil},
		{"hello-pie", "./testdata/progs/hello", []string{"CGO_ENABLED=0", "GOARCH=amd64"}, []string{"-buildmode=pie", "-ldflags=-s -w"}},
	}
	for _, cc := range []struct{ cc, goarch string }{{"gcc", "amd64"}, {"aarch64-linux-gnu-gcc", "arm64"}} {
		if _, err := exec.LookPath(cc.cc); err != nil {
			if os.Getenv("CI") != "" {
				t.Errorf("%s is not installed (.ci/run installs it)", cc.cc)
			}
			continue
		}
		env := []string{"GOARCH=" + cc.goarch, "CGO_ENABLED=1", "CC=" + cc.cc}
		progs = append(progs,
			prog{"cgocb-internal-" + cc.goarch, "./testdata/progs/cgocb", env, []string{"-ldflags=-linkmode=internal"}},
			prog{"cgocb-external-" + cc.goarch, "./testdata/progs/cgocb", env, []string{"-ldflags=-linkmode=external"}},
			prog{"cgocb-external-cshared-" + cc.goarch, "./testdata/progs/cgocb", env, []string{"-buildmode=c-shared"}})
	}
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			bin := build(t, goTool(), p.pkg, p.name, append([]string{"GOOS=linux"}, p.env...), p.flags...)
			_, err := openBinary(t, bin).SFrame()
			if errors.Is(err, gobin.ErrNoSFrame) && p.name == "hello-amd64" {
				t.Skipf("skipping: the toolchain under test writes no SFrame table (%v)", err)
			}
			if strings.HasPrefix(p.name, "cgocb-external-") && !hostLinkerCarriesSFrame(t, p.env) {
				// Only GNU ld 2.40 takes the table through an external
				// link (doc/sframe.md): with another linker the binary
				// must carry no table at all rather than a broken one.
				if !errors.Is(err, gobin.ErrNoSFrame) {
					t.Errorf("externally linked: SFrame() = %v, want ErrNoSFrame with this system linker", err)
				}
				return
			}
			code, stdout, stderr := fpcheck(t, "sframe", bin)
			t.Logf("%s%s", stdout, stderr)
			if code != exitClean {
				t.Errorf("fpcheck sframe: exit %d, want 0 (report above)", code)
			}
		})
	}
}

// TestSFrameToolchainBinaries checks the table in the fork's own toolchain
// binaries (the go command, the compiler, the linker), which the fork's
// linker wrote when make.bash built them.
func TestSFrameToolchainBinaries(t *testing.T) {
	if !isFork() {
		t.Skipf("skipping: %s is not the fork", runtime.Version())
	}
	tools := filepath.Join(runtime.GOROOT(), "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH)
	for _, bin := range []string{goTool(), filepath.Join(tools, "compile"), filepath.Join(tools, "link")} {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			if _, err := openBinary(t, bin).SFrame(); errors.Is(err, gobin.ErrNoSFrame) && os.Getenv("CI") == "" {
				t.Skipf("skipping: %s has no table (built before the linker wrote one? rerun make.bash)", bin)
			}
			code, stdout, stderr := fpcheck(t, "sframe", bin)
			if code != exitClean {
				t.Errorf("fpcheck sframe %s: exit %d, want 0\n%s%s", bin, code, stdout, stderr)
			}
		})
	}
}

// hostLinkerCarriesSFrame reports whether the C compiler named by env's CC
// links with GNU ld 2.40, the system linker the fork's linker carries the
// SFrame table through.
func hostLinkerCarriesSFrame(t *testing.T, env []string) bool {
	cc := "gcc"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "CC="); ok {
			cc = v
		}
	}
	out, err := exec.Command(cc, "-Wl,--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s -Wl,--version: %v\n%s", cc, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "GNU ld ") {
			f := strings.Fields(line)
			return f[len(f)-1] == "2.40"
		}
	}
	return false
}
