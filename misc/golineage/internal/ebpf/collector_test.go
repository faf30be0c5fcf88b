package ebpf

import (
	"encoding/binary"
	"errors"
	"os"
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

// TestCollectorSelf samples this test process: every event is of one of
// its threads, with a frame-pointer stack that starts at the sampled PC,
// and Close leaves no perf event or BPF object open. A kernel that refuses
// fails the test under CI=true (the CI machine runs as root on a kernel
// with BTF) and skips it elsewhere.
func TestCollectorSelf(t *testing.T) {
	c, err := Open(Config{TGID: os.Getpid(), Hz: 999})
	if errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
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
	c, err := Open(Config{TGID: os.Getpid(), Hz: 999, Lineage: true, TLSG: true, TLSGOffset: int64(base + slot - th[0]),
		OffRegionSeq: 0, OffRegionTid: 8, OffRegionCur: 16, OffRecSeq: 0, RecordSize: recordSize})
	if errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
