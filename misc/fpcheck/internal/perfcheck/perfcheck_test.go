package perfcheck

import (
	"debug/elf"
	"fmt"
	"os"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/gobin"
)

const script = `stress 100/101 PERF_RECORD_MMAP2 100/101: [0x400000(0x1000) @ 0 fd:01 1 0]: r-xp /x
stress 100/101
	ffffffff81000000 do_syscall_64+0x71 ([kernel.kallsyms])
	           1234 main.f+0x4 (/bin/stress)
	           5678 [unknown] ([unknown])

my prog   7/8
	           abcd cLoop+0x10 (/usr/lib/libc.so.6)
`

func TestParseScript(t *testing.T) {
	s, err := ParseScript(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || s[0].Comm != "stress" || s[0].TID != 101 || len(s[0].Frames) != 3 || s[1].Comm != "my prog" || s[1].TID != 8 {
		t.Fatalf("bad parse: %+v", s)
	}
	f := s[0].Frames[1]
	if f.Addr != 0x1234 || f.Sym != "main.f+0x4" || f.DSO != "/bin/stress" {
		t.Fatalf("bad frame: %+v", f)
	}
	if _, err := ParseScript(strings.NewReader("x 1/1\n\tzzz foo (bar)\n")); err == nil {
		t.Fatal("bad address accepted")
	}
}

// fileOff converts a virtual address of the test binary to the DSO offset
// perf prints.
func fileOff(t *testing.T, b *gobin.Binary, va uint64) uint64 {
	for _, p := range b.ELF.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && va >= p.Vaddr && va < p.Vaddr+p.Filesz {
			return va - p.Vaddr + p.Off
		}
	}
	t.Fatalf("%#x not in text", va)
	return 0
}

func TestClassify(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := gobin.Open(self)
	if err != nil {
		t.Skipf("test binary unreadable: %v", err)
	}
	defer b.Close()
	leaf := b.LookupFunc("runtime.mallocgc")
	goexit := b.LookupFunc("runtime.goexit")
	sw := b.LookupFunc("runtime.systemstack_switch")
	if leaf == nil || goexit == nil || sw == nil {
		t.Fatal("functions not found")
	}
	q := uint64(1)
	if b.Arch == "arm64" {
		q = 4
	}
	g := func(va uint64) Frame { return Frame{Addr: fileOff(t, b, va), Sym: "[unknown]", DSO: self} }
	junk := Frame{Addr: 0x1234, Sym: "[unknown]", DSO: "[unknown]"}
	mid := leaf.Entry + (leaf.End-leaf.Entry)/2
	var loop []Frame
	loop = append(loop, g(mid))
	for len(loop) < 127 {
		loop = append(loop, junk)
	}
	for _, tc := range []struct {
		frames []Frame
		want   Kind
	}{
		{[]Frame{g(mid), g(goexit.Entry + q)}, OK},
		{[]Frame{g(mid), g(sw.Entry + 8), g(goexit.Entry + q)}, OK},
		{[]Frame{g(mid), g(sw.Entry + 8 + q), g(goexit.Entry + q)}, NotReturnSite},
		{[]Frame{g(mid), junk}, Unsymbolized},
		{[]Frame{g(mid), g(leaf.Entry + 3)}, NotReturnSite},
		{[]Frame{{Addr: 0x10, Sym: "cLoop+0x10", DSO: "/usr/lib/libc.so.6"}, junk}, CLeaf},
		{[]Frame{{Addr: 0xffffffff81000000, Sym: "x", DSO: "[kernel.kallsyms]"}}, KernelOnly},
		{[]Frame{g(mid), {Addr: 0x10, Sym: "some_c_func+0x3", DSO: "/usr/lib/libc.so.6"}}, BadRoot},
		{[]Frame{g(mid), {Addr: 0x10, Sym: "start_thread+0x3", DSO: "/usr/lib/libc.so.6"}}, OK},
		{loop, Loop},
	} {
		c := NewChecker(127)
		r := c.Check([]Sample{{Comm: "t", Frames: tc.frames}})
		if r.Kinds[tc.want] != 1 {
			t.Errorf("%v: got %v, want %s", fmt.Sprint(tc.frames[:min(3, len(tc.frames))]), r.Kinds, tc.want)
		}
	}
}

// FuzzParseScript: perf script text is foreign input; the parser must
// return samples or an error, and the checker must judge whatever it
// returns, without panicking.
func FuzzParseScript(f *testing.F) {
	f.Add(script)
	f.Add("x 1/1\n\tzzz foo (bar)\n")
	f.Add("p 1\n\t ffffffffffffffff\n\t1 (\n\t2 a (b) (c)\n")
	f.Fuzz(func(t *testing.T, s string) {
		samples, err := ParseScript(strings.NewReader(s))
		if err != nil {
			return
		}
		r := NewChecker(127).Check(samples)
		if r.Samples != len(samples) {
			t.Fatalf("checked %d samples of %d", r.Samples, len(samples))
		}
	})
}

// TestCgoCallbackLink checks the rule for the C frames of a cgo callback
// (fpchain.CgoCallbackLink) on resolved chains, leaf first.
func TestCgoCallbackLink(t *testing.T) {
	goF := func(name string) resolved { return resolved{name: name, goCode: true, retOK: true} }
	cF := func(name string) resolved { return resolved{name: name} }
	cb := []resolved{goF("main.work"), goF("runtime.cgocallbackg"), goF("runtime.cgocallback"), goF("runtime.systemstack_switch")}
	tail := []resolved{goF("runtime.cgocall"), goF("main.main"), goF("runtime.main"), goF("runtime.goexit")}
	chain := func(parts ...[]resolved) []resolved {
		var out []resolved
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		res  []resolved
		bad  int
		how  callbackLink
	}{
		{"no callback", tail, -1, noCallback},
		{"to the cgocall site", chain(cb, []resolved{goF("runtime.asmcgocall")}, tail), -1, callbackToCgocall},
		{"through C", chain(cb, []resolved{cF("goWork"), cF("c_middle"), cF("c_top"), goF("runtime.asmcgocall")}, tail), -1, callbackThroughC},
		{"nested", chain(cb, []resolved{cF("c_inner"), goF("runtime.asmcgocall"), goF("runtime.cgocall"), goF("main.cb")}, cb[1:], []resolved{cF("c_outer"), goF("runtime.asmcgocall")}, tail), -1, callbackThroughC},
		{"C into other Go code", chain(cb, []resolved{cF("goWork"), cF("c_middle"), goF("main.main")}, tail), 4, noCallback},
		{"C to the end", chain(cb, []resolved{cF("goWork"), cF("c_middle"), cF("start_thread")}), 4, noCallback},
		{"marker elsewhere", chain([]resolved{goF("main.f"), goF("runtime.systemstack_switch"), cF("x"), goF("main.g")}, tail), -1, noCallback},
	} {
		bad, how := cgoCallbackLink(tc.res)
		if bad != tc.bad || how != tc.how {
			t.Errorf("%s: got %d, %d; want %d, %d", tc.name, bad, how, tc.bad, tc.how)
		}
	}
}
