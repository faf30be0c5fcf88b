package lineage_test

import (
	"context"
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"fpsafe.dev/misc/lineage"
	"fpsafe.dev/misc/lineage/internal/fixture"
)

// TestCore reads a gcore core of the ps example's fixture: the spawner's
// three workers wait on a channel, its locker on a mutex, each with the
// spawner as parent, and a worker's stack walks back to main.worker.
func TestCore(t *testing.T) {
	if _, err := exec.LookPath("gcore"); err != nil {
		t.Skip("skipping: gcore (gdb) not installed")
	}
	exe, pid := fixture.Start(t)
	dir := t.TempDir()
	time.Sleep(100 * time.Millisecond) // the workers block
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := filepath.Join(dir, "core")
	if o, err := exec.CommandContext(ctx, "gcore", "-o", prefix, fmt.Sprint(pid)).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, o)
	}
	mu := symbol(t, exe, "main.mu")
	p, err := lineage.OpenCore(fmt.Sprintf("%s.%d", prefix, pid), exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if d := p.CoreDamage(); d.Damaged() {
		t.Errorf("a whole core: damage %+v", d)
	}
	if ths := p.Threads(); len(ths) == 0 || ths[0].Registers.PC == 0 || ths[0].Registers.SP == 0 {
		t.Errorf("core threads %+v, want registers", ths)
	}
	var coreTIDs []int
	for _, th := range p.Threads() {
		coreTIDs = append(coreTIDs, th.TID)
	}
	sort.Ints(coreTIDs)
	if tids, err := p.ThreadIDs(); err != nil || fmt.Sprint(tids) != fmt.Sprint(coreTIDs) {
		t.Errorf("core ThreadIDs %v (%v), its threads %v", tids, err, coreTIDs)
	}
	if _, err := p.Watch(); err == nil {
		t.Error("Watch of a core: no error")
	}
	if err := p.OnTracerThread(func() { t.Error("OnTracerThread ran fn for a core") }); err == nil {
		t.Error("OnTracerThread of a core: no error")
	}
	if !locked(t, p.ReadAt, mu) {
		t.Errorf("main.mu is not locked in the core")
	}
	snap, err := p.Goroutines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var spawner uint64
	for _, g := range snap.Goroutines {
		if g.Start.Function == "main.spawner" && g.CreatedBy.Function == "main.main" {
			spawner = g.ID
		}
	}
	if spawner == 0 {
		t.Fatal("no main.spawner created by main.main")
	}
	got := map[string]int{}
	for _, g := range snap.Goroutines {
		if g.Parent != spawner {
			continue
		}
		got[fmt.Sprintf("%s %s %s %s", g.Start.Function, g.CreatedBy.Function, g.WaitReason, g.Wait.Kind)]++
		if g.Wait.Kind == "mutex" && g.Wait.Addr != mu {
			t.Errorf("locker %d waits on mutex %#x, main.mu is at %#x", g.ID, g.Wait.Addr, mu)
		}
		if g.Start.Function != "main.worker" {
			continue
		}
		frames, err := p.Stack(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if len(frames) == 0 || frames[0].Function != "runtime.gopark" || !hasFrame(frames, "main.worker") {
			t.Errorf("worker %d: stack %+v, want runtime.gopark ... main.worker", g.ID, frames)
		}
	}
	want := map[string]int{"main.worker main.spawner chan receive chan": 3, "main.locker main.spawner sync.Mutex.Lock mutex": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the spawner's goroutines: %v, want %v", got, want)
	}
}

func hasFrame(frames []lineage.Frame, fn string) bool {
	for _, f := range frames {
		if f.Function == fn {
			return true
		}
	}
	return false
}

// symbol is the address of symbol name in executable exe (not a PIE).
func symbol(t *testing.T, exe, name string) uint64 {
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s has no symbol %s", exe, name)
	return 0
}

// locked reads the sync.Mutex at addr and reports whether it is locked
// (the low bit of its state word).
func locked(t *testing.T, read func([]byte, uint64) error, addr uint64) bool {
	var b [4]byte
	if err := read(b[:], addr); err != nil {
		t.Fatalf("reading the mutex at %#x: %v", addr, err)
	}
	return b[0]&1 != 0
}
