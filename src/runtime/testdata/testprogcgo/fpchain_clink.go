// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build linux && (amd64 || arm64)

package main

// Frame-pointer chains of cgo callbacks through C frames that keep frame
// pointers (runtime/cgocallbacklink.go, doc/fp-boundaries.md). Go calls C
// (three levels, fpchain_clink_linux.c), which calls back into Go. In the
// callback the raw frame-pointer chain must read: the callback's Go
// frames, the C frames (symbolized with the binary's symbol table), then
// the goroutine's frames down to goexit, exactly runtime.Callers' Go frames
// (plus runtime.asmcgocall, whose return PC a C frame record holds). C built
// without frame pointers, or with a corrupted frame record, must give the
// chain without C frames, as before. Also checked: after the callback grew
// (moved) its stack, with Go->C->Go->C->Go recursion, and that C still
// returns correctly. The heap, block, mutex, goroutine and trace unwinders
// run in linked callbacks; the test runs this with GODEBUG=fpunwindcheck=2,
// which compares each of their frame-pointer unwinds with gentraceback's.

/*
void clink_o0_outer(int);
void clink_o2_outer(int);
void clink_nofp_outer(int);
void clink_bad_outer(int);
extern volatile int clink_sink;
*/
import "C"

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	rtrace "runtime/trace"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

func init() {
	register("FPChainCLink", FPChainCLink)
}

// Callback modes.
const (
	clinkCheckOnly = iota
	clinkGrow      // check, grow the stack, check again
	clinkRecurse   // call C again (clink_o0), which calls back
	clinkProfile   // run the profilers' unwinders
	clinkBlock     // block until clinkRelease is closed
)

// The C segments the chain must show after the callback frames of each
// nested callback; a callback whose C frames must not link has none.
type clinkSeg struct {
	funcs   []string // the C functions, innermost first
	partial bool     // built without frame pointers: any prefix of funcs, or none
}

var (
	clinkExpect  []clinkSeg // one per nested callback that must link, innermost first
	clinkErrs    []string
	clinkLinked  = map[string]int{} // case -> checks that saw its C frames
	clinkCase    string
	clinkOwn     bool // the outermost entry of clinkExpect is clinkCase's
	clinkRelease chan struct{}
	clinkBlocked chan struct{}
)

func clinkErrorf(format string, args ...any) {
	clinkErrs = append(clinkErrs, fmt.Sprintf(clinkCase+": "+format, args...))
}

// clinkSyms is the binary's function symbol table, for C PCs.
type clinkSym struct {
	name       string
	start, end uintptr
}

var clinkSyms []clinkSym

func clinkLoadSyms() error {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return err
	}
	var bias uintptr
	for _, s := range syms {
		if s.Name == "main.FPChainCLink" {
			bias = reflect.ValueOf(FPChainCLink).Pointer() - uintptr(s.Value)
		}
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			clinkSyms = append(clinkSyms, clinkSym{s.Name, uintptr(s.Value) + bias, uintptr(s.Value+s.Size) + bias})
		}
	}
	sort.Slice(clinkSyms, func(i, j int) bool { return clinkSyms[i].start < clinkSyms[j].start })
	return nil
}

// clinkCName names the C function holding return address pc, or "".
func clinkCName(pc uintptr) string {
	i := sort.Search(len(clinkSyms), func(i int) bool { return clinkSyms[i].start > pc-1 }) - 1
	if i >= 0 && pc-1 < clinkSyms[i].end {
		return clinkSyms[i].name
	}
	return ""
}

// clinkCheck walks the frame-pointer chain from its caller and checks it
// against runtime.Callers and clinkExpect.
//
//go:noinline
func clinkCheck() {
	fp, ret, here := fpchainFrame()
	if ret == 0 {
		clinkErrorf("own frame not found")
		return
	}
	type entry struct {
		pc   uintptr
		name string
		c    bool
	}
	chain := []entry{{pc: ret}}
	for fp != 0 {
		// C frames are on the thread's stack, which may lie below the
		// goroutine's: only alignment and length are checked here.
		if fp&7 != 0 || len(chain) == 512 {
			clinkErrorf("bad frame pointer %#x after %d frames (local at %#x)", fp, len(chain), here)
			return
		}
		pc := fpchainLoad(fp + 8)
		if runtime.FuncForPC(pc-1) != nil {
			chain = append(chain, entry{pc: pc})
		} else {
			chain = append(chain, entry{pc: pc, name: clinkCName(pc), c: true})
		}
		fp = fpchainLoad(fp)
	}
	// The Go frames, as runtime.Callers gives them.
	var goPCs []uintptr
	var segs [][]string
	inC := false
	for i, e := range chain {
		if !e.c {
			goPCs = append(goPCs, e.pc)
			inC = false
			continue
		}
		if e.name == "" {
			clinkErrorf("frame %d: PC %#x is in no function", i, e.pc)
		}
		if !inC {
			if i == 0 || chain[i-1].c || pcNames([]uintptr{chain[i-1].pc})[0] != "runtime.systemstack_switch" {
				clinkErrorf("C frame %s not right after cgocallback's record", e.name)
			}
			segs = append(segs, nil)
		}
		inC = true
		segs[len(segs)-1] = append(segs[len(segs)-1], e.name)
	}
	got := slices.DeleteFunc(pcNames(goPCs), func(s string) bool { return s == "runtime.asmcgocall" })
	pcs := make([]uintptr, 512)
	want := pcNames(pcs[:runtime.Callers(1, pcs)])
	if !slices.Equal(got, want) {
		clinkErrorf("Go frames of the frame-pointer chain\n\t%s\nruntime.Callers\n\t%s",
			strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if want[len(want)-1] != "runtime.goexit" || !slices.Contains(want, "main.FPChainCLink") && !slices.Contains(want, "main.clinkBlocker") {
		clinkErrorf("stack does not reach the cgocall site and goexit: %v", want)
	}
	// The C segments, innermost callback first. cgo's export stub
	// (crosscall2's caller) may lead a segment, and the cgo call's C
	// wrapper may end it, when they keep frame pointers.
	for i, seg := range segs {
		if len(seg) > 0 && seg[0] == "goCLinkCallback" {
			seg = seg[1:]
		}
		if len(seg) > 0 && strings.HasPrefix(seg[len(seg)-1], "_cgo_") {
			seg = seg[:len(seg)-1]
		}
		segs[i] = seg
	}
	exp := clinkExpect
	if len(segs) < len(exp) && exp[len(exp)-1].partial {
		exp = exp[:len(exp)-1] // C without frame pointers may leave no record
	}
	if len(segs) != len(exp) {
		clinkErrorf("C segments %q, want %d: %v", segs, len(exp), exp)
		return
	}
	for i, seg := range segs {
		e := exp[i]
		if !slices.Equal(seg, e.funcs) && !(e.partial && slices.Equal(seg, e.funcs[:min(len(seg), len(e.funcs))])) {
			clinkErrorf("C segment %d: %q, want %q", i, seg, e.funcs)
		}
	}
	if len(segs) == len(clinkExpect) && len(segs) > 0 && clinkOwn {
		clinkLinked[clinkCase]++ // the case's own C frames are linked
	}
}

// clinkFuncs lists the C functions of one of fpchain_clink_linux.c's
// CLINK_LEVELS, innermost first.
func clinkFuncs(prefix string) []string {
	return []string{prefix + "_inner", prefix + "_mid", prefix + "_outer"}
}

//go:noinline
func clinkGrowAndCheck(n int) {
	var pad [1024]byte
	if n == 0 {
		clinkCheck()
		return
	}
	clinkGrowAndCheck(n - 1)
	pad[n%len(pad)] = byte(n)
	fpchainSink += int(pad[(n+1)%len(pad)])
}

var (
	clinkMu    sync.Mutex
	clinkAlloc [][]byte
)

//go:noinline
func clinkProfilers() {
	for i := 0; i < 10; i++ {
		clinkAlloc = append(clinkAlloc, make([]byte, 1024+i))
	}
	ch := make(chan int)
	go func() { time.Sleep(time.Millisecond); ch <- 1 }()
	<-ch
	clinkMu.Lock()
	done := make(chan bool)
	go func() { clinkMu.Lock(); clinkMu.Unlock(); close(done) }()
	time.Sleep(time.Millisecond)
	clinkMu.Unlock()
	<-done
	rtrace.Log(context.Background(), "clink", clinkCase)
	var buf bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&buf, 1)
	clinkCheck()
}

//export goCLinkCallback
func goCLinkCallback(mode C.int) {
	switch mode {
	case clinkCheckOnly:
		clinkCheck()
	case clinkGrow:
		clinkCheck()
		clinkGrowAndCheck(200)
		clinkCheck()
	case clinkRecurse:
		clinkCheck()
		clinkExpect = append([]clinkSeg{{funcs: clinkFuncs("clink_o0")}}, clinkExpect...)
		C.clink_o0_outer(clinkGrow)
		clinkExpect = clinkExpect[1:]
		clinkCheck()
	case clinkProfile:
		clinkProfilers()
	case clinkBlock:
		close(clinkBlocked)
		<-clinkRelease
		clinkCheck()
	}
}

// clinkBlocker sits in a linked callback while another goroutine takes a
// goroutine profile.
func clinkBlocker(done chan struct{}) {
	C.clink_o2_outer(clinkBlock)
	close(done)
}

func FPChainCLink() {
	if err := clinkLoadSyms(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	runtime.MemProfileRate = 1
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	var tr bytes.Buffer
	if err := rtrace.Start(&tr); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	type cCase struct {
		name string
		fn   func(C.int)
		exp  []clinkSeg
	}
	cases := []cCase{
		{"O0", func(m C.int) { C.clink_o0_outer(m) }, []clinkSeg{{funcs: clinkFuncs("clink_o0")}}},
		{"O2", func(m C.int) { C.clink_o2_outer(m) }, []clinkSeg{{funcs: clinkFuncs("clink_o2")}}},
		{"O2-omit-frame-pointer", func(m C.int) { C.clink_nofp_outer(m) }, []clinkSeg{{funcs: clinkFuncs("clink_nofp"), partial: true}}},
		// clink_o2_inner's record links to clink_bad_mid's, which is corrupt.
		{"corrupt", func(m C.int) { C.clink_bad_outer(m) }, nil},
	}
	for _, c := range cases {
		clinkCase = c.name
		for _, mode := range []C.int{clinkCheckOnly, clinkGrow, clinkRecurse, clinkProfile} {
			before := C.clink_sink
			clinkExpect, clinkOwn = c.exp, c.exp != nil
			c.fn(mode)
			// Each C function counts its return.
			if n := C.clink_sink - before; n < 3 {
				clinkErrorf("mode %d: C returned through %d frames, want 3", mode, n)
			}
			clinkExpect = nil
			clinkCheck() // no callback on the stack: no C frames
		}
	}
	clinkCase = "goroutine profile"
	clinkExpect, clinkOwn = []clinkSeg{{funcs: clinkFuncs("clink_o2")}}, true
	clinkRelease, clinkBlocked = make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go clinkBlocker(done)
	<-clinkBlocked
	var buf bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&buf, 1)
	if !strings.Contains(buf.String(), "main.clinkBlocker") {
		clinkErrorf("goroutine profile lacks the callback's goroutine:\n%s", buf.String())
	}
	close(clinkRelease)
	<-done
	rtrace.Stop()

	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for k := range clinkLinked {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Printf("linked %s: %d\n", c, clinkLinked[c])
	}
	if len(clinkErrs) > 0 {
		fmt.Println(strings.Join(clinkErrs, "\n"))
		os.Exit(1)
	}
	fmt.Println("OK")
}
