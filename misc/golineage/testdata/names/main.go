// names starts goroutines in every way a go statement can name its
// function, each of which reports its id and the outermost frame of its
// own runtime.Stack (the runtime leaves compiler wrappers out of it, so
// that is the function its go statement names), then parks. Some report
// and exit after starting a child, so the child's ancestor entries are all
// that is left of them. Then it prints "ready" and waits for its standard
// input to close.
//
// Output lines:
//
//	name GOID FUNC   the goroutine's function as the runtime sees it
//	keep GOID FUNC   a goroutine started through a function value with
//	                 arguments: its wrapper calls through a register
//	ready
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

var (
	mu      sync.Mutex
	out     = bufio.NewWriter(os.Stdout)
	stop    = make(chan struct{})
	started sync.WaitGroup
)

// report prints "TAG GOID FUNC", FUNC the outermost frame of the calling
// goroutine's stack.
//
//go:noinline
func report(tag string) {
	buf := make([]byte, 1<<16)
	s := string(buf[:runtime.Stack(buf, false)])
	lines := strings.Split(s, "\n")
	var goid, fn string
	goid = strings.Fields(lines[0])[1]
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "created by ") {
			break
		}
		if i := strings.LastIndex(l, "("); i > 0 && !strings.HasPrefix(l, "\t") {
			fn = l[:i]
		}
	}
	mu.Lock()
	fmt.Fprintf(out, "%s %s %s\n", tag, goid, fn)
	mu.Unlock()
}

// park reports the goroutine and parks it until the end.
//
//go:noinline
func park() {
	report("name")
	started.Done()
	<-stop
}

//go:noinline
func plain(x int) {
	if x > 0 {
		park()
	}
}

// small is inlined into its go statement's wrapper.
func small(x int) {
	if x > 0 {
		park()
	}
}

type T struct{ n int }

//go:noinline
func (t *T) ptr(x int) { t.n += x; park() }

//go:noinline
func (t T) val(x int) {
	if t.n+x > 0 {
		park()
	}
}

//go:noinline
func (t *T) noargs() { park() }

// startGo runs f on a new goroutine, as nats-server's startGoRoutine
// does: the goroutine's function is startGo's closure.
//
//go:noinline
func startGo(f func()) {
	go func() {
		f()
	}()
}

// goCall starts f(1): the wrapper calls f through a register.
//
//go:noinline
func goCall(f func(int)) { go f(1) }

// parent reports itself, starts a child and exits.
//
//go:noinline
func parent(x int) {
	report("name")
	go plain(x)
}

// smallParent is parent, inlined into its wrapper.
func smallParent(x int) {
	report("name")
	go small(x)
}

func main() {
	t := &T{n: 1}
	var v T
	fv := func(x int) {
		report("keep")
		plain(x)
	}
	started.Add(12)
	go plain(1)
	go small(1)
	go t.ptr(1)
	go v.val(1)
	m := t.noargs
	go m()
	go func() { park() }()
	go func(x int) { plain(x) }(1) // through a wrapper to the closure
	startGo(park)
	goCall(fv)
	go parent(1)
	go smallParent(1)
	go func() { go parent(1) }()
	started.Wait()
	mu.Lock()
	fmt.Fprintln(out, "ready")
	out.Flush()
	mu.Unlock()
	bufio.NewReader(os.Stdin).ReadString('\n')
	close(stop)
}
