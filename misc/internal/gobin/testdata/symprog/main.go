// symprog prints runtime.Callers PCs and what runtime.CallersFrames makes of
// them, from stacks that mix inlined, generic, closure and method frames, so
// the symbolizer can be checked against the runtime. Output lines:
//
//	stack N
//	pc HEX
//	frame FUNC FILE LINE
//	entry HEX FUNC   (physical function entry, from runtime.FuncForPC)
//	mainpc HEX       (main.main's entry, for a PIE's load bias)
package main

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
)

var out strings.Builder
var nstack int

func dump() {
	pcs := make([]uintptr, 128)
	n := runtime.Callers(1, pcs)
	pcs = pcs[:n]
	fmt.Fprintf(&out, "stack %d\n", nstack)
	nstack++
	for _, pc := range pcs {
		fmt.Fprintf(&out, "pc %x\n", pc)
		if f := runtime.FuncForPC(pc - 1); f != nil {
			fmt.Fprintf(&out, "entry %x %s\n", f.Entry(), f.Name())
		}
	}
	fr := runtime.CallersFrames(pcs)
	for {
		f, more := fr.Next()
		fmt.Fprintf(&out, "frame %s %s %d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
}

// Small functions the compiler inlines.
func leaf()      { dump() }
func inl1()      { leaf() }
func inl2()      { inl1() }
func inl3(n int) { inl2(); _ = n }

//go:noinline
func recurse(n int) {
	if n == 0 {
		inl3(n)
		return
	}
	recurse(n - 1)
}

type T struct{ x int }

//go:noinline
func (t *T) method() { recurse(t.x) }

type G[X any] struct{ v X }

//go:noinline
func (g G[X]) gm() { generic(g.v) }

//go:noinline
func generic[X any](x X) {
	f := func() { leaf() }
	f()
	(&T{x: 3}).method()
}

func main() {
	G[int]{v: 1}.gm()
	done := make(chan bool)
	go func() {
		G[string]{v: "s"}.gm()
		done <- true
	}()
	<-done
	fmt.Fprintf(&out, "mainpc %x\n", reflect.ValueOf(main).Pointer())
	os.Stdout.WriteString(out.String())
}
