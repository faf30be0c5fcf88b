package ebpf

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openTest opens a collector. A kernel that refuses fails the test under
// CI=true (the CI machine runs as root on a kernel with BTF) and skips it
// elsewhere.
func openTest(t *testing.T, cfg Config) *Collector {
	t.Helper()
	c, err := Open(cfg)
	if errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkClosed fails if this process holds a perf event or a BPF object
// (a program, map or link).
func checkClosed(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if strings.Contains(l, "perf_event") || strings.Contains(l, "bpf") {
			t.Errorf("fd %s -> %s left open after Close", e.Name(), l)
		}
	}
}

// TestCollectorSelf samples this test process: every event is of one of
// its threads, with a frame-pointer stack that starts at the sampled PC,
// and Close leaves no perf event or BPF object open.
func TestCollectorSelf(t *testing.T) {
	c := openTest(t, Config{Hz: 999})
	if err := c.AddTarget(os.Getpid(), Target{}); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	go func() {
		for x := 0; !stop.Load(); x++ {
		}
	}()
	var got []*Event
	for deadline := time.Now().Add(10 * time.Second); len(got) < 20; {
		e, err := c.Read(deadline)
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, e)
		c.rec.RawSample = nil // keep e's slices: the next read allocates
	}
	stop.Store(true)
	c.Close()
	withStack := 0
	for _, e := range got {
		if e.TGID != uint32(os.Getpid()) {
			t.Errorf("event of process %d, want %d", e.TGID, os.Getpid())
		}
		if _, err := os.Stat(filepath.Join("/proc/self/task", strconv.Itoa(int(e.TID)))); err != nil {
			t.Errorf("event of thread %d, not one of this process's", e.TID)
		}
		if len(e.Stack) == 0 {
			continue
		}
		withStack++
		// The kernel's walk starts at the user PC (the spinning loop is
		// frameless, so it may also end there).
		if e.Stack[0] != e.PC {
			t.Errorf("event's stack starts at %#x, its PC is %#x", e.Stack[0], e.PC)
		}
	}
	if withStack == 0 {
		t.Errorf("no event has a stack: %+v", got[0])
	}
	checkClosed(t)
}

// TestCollectorRecordAtPageEnd: a lineage record that ends in a page the
// process never touched (not mapped yet, so the program cannot read it) is
// still copied up to the page boundary. The test builds the chain the
// program follows (TLS slot, g, m, region, record) in its own memory,
// pointed at by the thread pointer of a locked thread, with the record's
// last bytes in an untouched page.
func TestCollectorRecordAtPageEnd(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 2*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	const slot, g, m, region, recordSize, inFirst = 0, 64, 128, 192, 272, 100
	rec := 4096 - inFirst
	le := binary.LittleEndian
	le.PutUint64(mem[slot:], base+g)
	le.PutUint64(mem[g:], base+m)
	le.PutUint64(mem[m:], base+region)
	le.PutUint64(mem[rec:], 2)      // seq
	le.PutUint64(mem[rec+56:], 777) // goid, at this test's offset
	// mem[4096:] is never written.

	ready := make(chan [2]uint64)
	var stop atomic.Bool
	go func() {
		runtime.LockOSThread()
		var fs uint64
		if _, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, 0x1003 /* ARCH_GET_FS */, uintptr(unsafe.Pointer(&fs)), 0); errno != 0 {
			t.Error(errno)
		}
		tid := uint64(unix.Gettid())
		le.PutUint64(mem[region+8:], tid)
		le.PutUint64(mem[region+16:], base+uint64(rec))
		ready <- [2]uint64{fs, tid}
		for !stop.Load() {
		}
	}()
	th := <-ready
	defer stop.Store(true)
	c := openTest(t, Config{Hz: 999})
	defer c.Close()
	if err := c.AddTarget(os.Getpid(), Target{Lineage: true, TLSG: true, TLSGOffset: int64(base + slot - th[0]),
		OffRegionSeq: 0, OffRegionTid: 8, OffRegionCur: 16, OffRecSeq: 0, RecordSize: recordSize}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		e, err := c.Read(deadline)
		if err != nil {
			t.Fatalf("no event of the spinning thread %d: %v", th[1], err)
		}
		if uint64(e.TID) != th[1] {
			continue
		}
		if e.Flags != FlagLineage|FlagRegionOK|FlagRecord || e.Cur != base+uint64(rec) || e.Seq1 != 2 || e.Seq2 != 2 {
			t.Fatalf("event %+v: want the record copied under seq 2", e)
		}
		if len(e.Record) != inFirst || le.Uint64(e.Record[56:]) != 777 {
			t.Errorf("copied %d bytes (goid %d), want the %d before the page boundary (goid 777)", len(e.Record), le.Uint64(e.Record[56:]), inFirst)
		}
		return
	}
}

// TestCollectorTargets samples two processes with one collector: this one
// and a spinning child, each event naming its process, and none of a
// process after RemoveTarget returned.
func TestCollectorTargets(t *testing.T) {
	c := openTest(t, Config{Hz: 999})
	defer c.Close()
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for x := 0; !stop.Load(); x++ {
		}
	}()
	self, other := uint32(os.Getpid()), uint32(child.Process.Pid)
	for _, pid := range []uint32{self, other} {
		if err := c.AddTarget(int(pid), Target{}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint32]int{}
	for deadline := time.Now().Add(20 * time.Second); seen[self] < 5 || seen[other] < 5; {
		e, err := c.Read(deadline)
		if err != nil {
			t.Fatalf("events by process %v: %v", seen, err)
		}
		if e.TGID != self && e.TGID != other {
			t.Fatalf("event of process %d, not a target", e.TGID)
		}
		seen[e.TGID]++
	}
	if err := c.RemoveTarget(int(other)); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveTarget(int(other)); err != nil {
		t.Errorf("removing a removed target: %v", err)
	}
	// Read past what the ring buffer can hold (events the program wrote
	// before the removal), then sample this process alone for a while.
	backlog := (1<<21)/eventSize + 1
	for n, deadline := 0, time.Now().Add(20*time.Second); n < backlog+50; n++ {
		e, err := c.Read(deadline)
		if err != nil {
			t.Fatalf("after %d events: %v", n, err)
		}
		if n >= backlog && e.TGID != self {
			t.Fatalf("event of process %d after it was removed", e.TGID)
		}
	}
	for _, pid := range []int{0, -1, 1 << 30} {
		if err := c.AddTarget(pid, Target{}); err == nil {
			t.Errorf("AddTarget(%d) succeeded", pid)
		}
	}
}

// TestCollectorProcs: with Config.Procs, a process that starts is reported
// as it execs, and its exit once it is a target; the exit of a process
// that is not one is not reported.
func TestCollectorProcs(t *testing.T) {
	c := openTest(t, Config{Hz: 1, Procs: true})
	run := func(d string) int {
		cmd := exec.Command("sleep", d)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Wait() })
		return cmd.Process.Pid
	}
	// waitFor reads events until one of process pid with flag, failing on
	// an exit of a process in not.
	waitFor := func(pid int, flag uint32, not int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			e, err := c.Read(deadline)
			if err != nil {
				t.Fatalf("no event %#x of process %d: %v", flag, pid, err)
			}
			if e.Flags&FlagExit != 0 && int(e.TGID) == not {
				t.Fatalf("exit of process %d, which is not a target", not)
			}
			if int(e.TGID) == pid && e.Flags&flag != 0 {
				return
			}
		}
	}
	untracked := run("0.1")
	waitFor(untracked, FlagExec, 0)
	target := run("0.5")
	waitFor(target, FlagExec, 0)
	if err := c.AddTarget(target, Target{}); err != nil {
		t.Fatal(err)
	}
	waitFor(target, FlagExit, untracked)
	c.Close()
	checkClosed(t)
}
