package lineage_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"fpsafe.dev/misc/lineage"
)

// The program's own view: GoroutineStacks against this test process's
// goroutine dump (runtime/pprof's goroutine profile at debug=2), frame for
// frame, with only the SDK's documented view (System, Frame.Hidden): no
// name filter in the test.

// dumpG is one goroutine of a debug=2 dump.
type dumpG struct {
	id        uint64
	state     string
	frames    []string // "func file:line"
	createdBy string   // "func file:line", "" for none
	parent    uint64
	text      string // the goroutine's lines, to compare two dumps
}

// parseDump parses a goroutine dump.
func parseDump(t *testing.T, b []byte) map[uint64]*dumpG {
	t.Helper()
	out := map[uint64]*dumpG{}
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		lines := strings.Split(block, "\n")
		head, ok := strings.CutPrefix(lines[0], "goroutine ")
		if !ok {
			continue
		}
		id, rest, _ := strings.Cut(head, " ")
		g := &dumpG{text: block}
		g.id, _ = strconv.ParseUint(id, 10, 64)
		g.state = strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]:")
		g.state, _, _ = strings.Cut(g.state, ",")
		for i := 1; i+1 < len(lines); i += 2 {
			fn, file := lines[i], strings.TrimSpace(lines[i+1])
			file, _, _ = strings.Cut(file, " +0x")
			if c, ok := strings.CutPrefix(fn, "created by "); ok {
				fn, in, _ := strings.Cut(c, " in goroutine ")
				g.createdBy = fn + " " + file
				g.parent, _ = strconv.ParseUint(in, 10, 64)
				break
			}
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			g.frames = append(g.frames, fn+" "+file)
		}
		out[g.id] = g
	}
	return out
}

func dumpNow(t *testing.T) map[uint64]*dumpG {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	return parseDump(t, buf.Bytes())
}

// sdkFrames is what the dump would print of g's stack.
func sdkFrames(g *lineage.Goroutine) []string {
	var out []string
	for _, f := range lineage.DumpFrames(g.Stack) {
		out = append(out, fmt.Sprintf("%s %s:%d", f.Function, f.File, f.Line))
	}
	return out
}

type parkedSet struct {
	mu    sync.Mutex
	rw    sync.RWMutex
	wg    sync.WaitGroup
	ch    chan int // sent to, never received from
	ch2   chan int // received from by select, never sent to
	quit  chan struct{}
	ready sync.WaitGroup
	once  sync.Once // stop's
}

// startParked starts goroutines blocked in various ways, started by a
// go statement with arguments (a wrapper), a closure, a method value.
func startParked(n int) *parkedSet {
	s := &parkedSet{ch: make(chan int), ch2: make(chan int), quit: make(chan struct{})}
	s.mu.Lock()
	s.rw.Lock()
	s.wg.Add(1)
	for i := range n {
		s.ready.Add(1)
		switch i % 6 {
		case 0:
			go chanWorker(s, i)
		case 1:
			go func() { s.ready.Done(); s.mu.Lock(); s.mu.Unlock() }()
		case 2:
			go s.waiter()
		case 3:
			go func(k int) { s.ready.Done(); s.rw.RLock(); s.rw.RUnlock(); _ = k }(i)
		case 4:
			go selecter(s)
		case 5:
			pprof.Do(context.Background(), pprof.Labels("k", strconv.Itoa(i)), func(context.Context) {
				go deep(s, 20)
			})
		}
	}
	s.ready.Wait()
	return s
}

// stop releases the goroutines (once, however many times it is called).
func (s *parkedSet) stop() {
	s.once.Do(func() {
		close(s.quit)
		s.mu.Unlock()
		s.rw.Unlock()
		s.wg.Done()
	})
}

//go:noinline
func chanWorker(s *parkedSet, i int) {
	s.ready.Done()
	select {
	case s.ch <- i:
	case <-s.quit:
	}
}

func (s *parkedSet) waiter() { s.ready.Done(); s.wg.Wait() }

//go:noinline
func selecter(s *parkedSet) {
	s.ready.Done()
	select {
	case <-s.ch2:
	case <-s.quit:
	}
}

//go:noinline
func deep(s *parkedSet, n int) {
	if n > 0 {
		deep(s, n-1)
		return
	}
	s.ready.Done()
	<-s.quit
}

// waitParked waits until every goroutine the dump shows in one of the
// test's functions is blocked.
func waitParked(t *testing.T) {
	for try := 0; try < 200; try++ {
		busy := false
		for _, g := range dumpNow(t) {
			if g.state == "runnable" || g.state == "running" && len(g.frames) > 0 && !strings.Contains(g.frames[0], "pprof") && !strings.Contains(g.frames[0], "runtime.Stack") {
				busy = true
			}
		}
		if !busy {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openParked starts n parked goroutines (startParked), opens this process
// and waits until they are parked. The cleanup stops them.
func openParked(t *testing.T, n int) (*lineage.Process, *parkedSet) {
	s := startParked(n)
	t.Cleanup(s.stop)
	p, err := lineage.OpenPID(context.Background(), os.Getpid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	waitParked(t)
	return p, s
}

func TestGoroutineStacksMatchDump(t *testing.T) {
	ctx := context.Background()
	p, _ := openParked(t, 60)
	before := dumpNow(t)
	snap, err := p.GoroutineStacks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := dumpNow(t)
	if !slices.IsSortedFunc(snap.Goroutines, func(a, b *lineage.Goroutine) int { return int(a.ID) - int(b.ID) }) {
		t.Errorf("goroutines not in ID order")
	}
	compared, system := 0, 0
	seen := map[uint64]bool{}
	for _, g := range snap.Goroutines {
		seen[g.ID] = true
		d1, d2 := before[g.ID], after[g.ID]
		if g.System {
			system++
			if d1 != nil || d2 != nil {
				t.Errorf("goroutine %d (%s) is a system goroutine, but the dump shows it", g.ID, g.Start.Function)
			}
			continue
		}
		if d1 == nil || d2 == nil || d1.text != d2.text || d1.state == "running" || g.State == lineage.StateRunning {
			continue // it changed, or started or ended, while read
		}
		compared++
		if got := sdkFrames(g); !slices.Equal(got, d1.frames) {
			t.Errorf("goroutine %d: frames\n\t%s\nthe dump's\n\t%s", g.ID, strings.Join(got, "\n\t"), strings.Join(d1.frames, "\n\t"))
		}
		if cb := fmt.Sprintf("%s %s:%d", g.CreatedBy.Function, g.CreatedBy.File, g.CreatedBy.Line); d1.createdBy != "" && (cb != d1.createdBy || g.Parent != d1.parent) {
			t.Errorf("goroutine %d: created by %s in %d, the dump says %s in %d", g.ID, cb, g.Parent, d1.createdBy, d1.parent)
		}
		if d1.state != "" && !strings.HasPrefix(d1.state, g.WaitReason) && g.State == lineage.StateWaiting {
			t.Errorf("goroutine %d: wait reason %q, the dump says %q", g.ID, g.WaitReason, d1.state)
		}
	}
	// Every stable goroutine of the dump is in the read.
	for id, d := range before {
		if a := after[id]; a != nil && a.text == d.text && d.state != "running" && !seen[id] {
			t.Errorf("the dump's goroutine %d [%s] is missing from the read", id, d.state)
		}
	}
	if compared < 60 {
		t.Errorf("compared %d goroutines with the dump, want at least the test's 60", compared)
	}
	if system == 0 {
		t.Errorf("no goroutine is marked System (the runtime starts its sweeper and scavenger at init)")
	}
	t.Logf("%d goroutines compared, %d system, %d reads", compared, system, snap.Reads)
}

// TestGoroutineStacksBatch: the batch read costs a few vectored reads per
// hundred goroutines, and gives the stacks that reading each goroutine on
// its own gives.
func TestGoroutineStacksBatch(t *testing.T) {
	const n = 2000
	ctx := context.Background()
	p, s := openParked(t, n)
	batch, err := p.GoroutineStacks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Goroutines) < n {
		t.Fatalf("read %d goroutines (torn %d, retried %d), want at least %d", len(batch.Goroutines), batch.Torn, batch.Retried, n)
	}
	// A batch of 128 goroutines costs about ten vectored reads (its g's
	// and records, sudogs, stacks, the re-reads); reading goroutines one
	// at a time costs several reads each.
	if max := len(batch.Goroutines)/8 + 16; batch.Reads > max || batch.Reads == 0 {
		t.Errorf("%d goroutines in %d vectored reads, want 1 to %d", len(batch.Goroutines), batch.Reads, max)
	}
	each, err := p.Goroutines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if max := len(each.Goroutines)/8 + 16; each.Reads > max || each.Reads == 0 {
		t.Errorf("Goroutines: %d goroutines in %d vectored reads, want 1 to %d", len(each.Goroutines), each.Reads, max)
	}
	byID := map[uint64]*lineage.Goroutine{}
	for _, g := range each.Goroutines {
		byID[g.ID] = g
	}
	deepPC := reflect.ValueOf(deep).Pointer()
	const deepName = "fpsafe.dev/misc/lineage_test.deep"
	compared := 0
	var moved []uint64 // goroutines not the test's whose stacks differed
	for _, g := range batch.Goroutines {
		o := byID[g.ID]
		if o == nil || o.State != lineage.StateWaiting || g.State != lineage.StateWaiting || g.WaitReason != o.WaitReason {
			continue
		}
		one, err := p.Stack(ctx, o)
		if err != nil {
			t.Errorf("goroutine %d: %v", g.ID, err)
			continue
		}
		if !reflect.DeepEqual(one, g.Stack) {
			if g.Start.Function != deepName {
				// The runtime's and the testing package's goroutines
				// may run between the two reads, and park again
				// elsewhere with the same wait reason (a mark worker
				// does). The test's own cannot.
				moved = append(moved, g.ID)
				continue
			}
			t.Errorf("goroutine %d: the batch read's stack differs from its own read's:\n%v\n%v", g.ID, g.Stack, one)
		}
		if g.StackErr != nil {
			t.Errorf("goroutine %d: %v", g.ID, g.StackErr)
		}
		if g.Start.Function == deepName {
			// go deep(s, 20) starts in a wrapper that calls deep.
			if g.Start.PC != uint64(deepPC) || !strings.Contains(g.Wrapper.Function, ".gowrap") || g.Wrapper.PC == 0 {
				t.Errorf("goroutine %d: Start %+v (want PC %#x), Wrapper %+v", g.ID, g.Start, deepPC, g.Wrapper)
			}
			if len(g.Labels) != 1 || g.Labels[0].Key != "k" {
				t.Errorf("goroutine %d: labels %v", g.ID, g.Labels)
			}
		}
		compared++
	}
	if compared < n*9/10 {
		t.Errorf("compared %d of %d parked goroutines", compared, n)
	}
	// A goroutine that differed must agree in a later pair of reads made
	// back to back: one that always differs is the SDK's fault, not the
	// goroutine's.
	if len(moved) > 0 {
		t.Logf("goroutines %v (not the test's) differed between the reads; reading them again", moved)
	}
	for round := 0; len(moved) > 0 && round < 5; round++ {
		again, err := p.GoroutineStacks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[uint64]*lineage.Goroutine{}
		for _, g := range again.Goroutines {
			byID[g.ID] = g
		}
		still := moved[:0]
		for _, id := range moved {
			g := byID[id]
			if g == nil || g.State != lineage.StateWaiting {
				continue // it ended or runs: nothing to compare
			}
			if one, err := p.Stack(ctx, g); err != nil || !reflect.DeepEqual(one, g.Stack) {
				still = append(still, id)
				if round == 4 {
					t.Errorf("goroutine %d: the batch read's stack differs from its own read's in 5 further pairs of reads:\n%v\n%v (%v)", id, g.Stack, one, err)
				}
			}
		}
		moved = still
	}
	runtime.KeepAlive(s)
}

// BenchmarkGoroutineStacks reads this process's goroutines, 10,000 of them
// parked 20 frames deep, with their stacks (benchmarks/golineage measures
// the same against another process, as a reader would).
func BenchmarkGoroutineStacks(b *testing.B) {
	s := &parkedSet{quit: make(chan struct{})}
	for range 10000 {
		s.ready.Add(1)
		go deep(s, 20)
	}
	s.ready.Wait()
	defer close(s.quit)
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	for b.Loop() {
		snap, err := p.GoroutineStacks(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Goroutines) < 10000 {
			b.Fatalf("%d goroutines", len(snap.Goroutines))
		}
	}
}
