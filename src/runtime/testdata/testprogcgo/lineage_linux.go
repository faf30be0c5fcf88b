// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

// Goroutine lineage on an extra M: a C-created thread calls into Go. The
// reader (runtime/testdata/lineageabi) knows nothing of the runtime; it
// finds the lineage ABI header by its cookie in the executable file and
// reads memory through its offsets.

/*
extern int lineageRunCThread(void);
extern int lineageRunWaitingCThread(void);
extern void lineageLetCThreadGoOn(void);
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/testdata/lineageabi"
	"syscall"
	"time"
)

func init() {
	register("LineageCgoCallback", LineageCgoCallback)
	register("LineageCgoCallbackReturn", LineageCgoCallbackReturn)
}

var (
	lp64 = lineageabi.P64
	lp32 = lineageabi.P32
)

var (
	linRes     = make(chan error, 4)
	linCTid    uint64
	linHdrAddr uintptr
)

//export GoLineageCallback
func GoLineageCallback(call C.int) {
	linRes <- lineageInCallback(int(call))
}

func lineageInCallback(call int) error {
	l := lineageabi.Header(linHdrAddr)
	tid := uint64(syscall.Gettid())
	linCTid = tid
	r := l.Region(tid)
	if r == 0 {
		return fmt.Errorf("call %d: no region for C thread %d", call, tid)
	}
	if st := lp32(r + l.U(lineageabi.OffRegionState)); st != 2 {
		return fmt.Errorf("call %d: region state %d, want 2 (extra M)", call, st)
	}
	if fs, ok, err := lineageabi.ThreadPointer(); err != nil {
		return err
	} else if lp32(uintptr(l)+lineageabi.OffFlags)&8 != 0 && ok {
		g := uintptr(lp64(uintptr(int64(fs) + int64(lp64(uintptr(l)+lineageabi.OffTLSG)))))
		m := uintptr(lp64(g + l.U(lineageabi.OffGM)))
		if got := uintptr(lp64(m + l.U(lineageabi.OffMRegion))); got != r {
			return fmt.Errorf("TLS path (offset %d) gives region %#x, registry %#x", int64(lp64(uintptr(l)+lineageabi.OffTLSG)), got, r)
		}
	}
	rec := uintptr(lp64(r + l.U(lineageabi.OffRegionCur)))
	if rec == 0 {
		return fmt.Errorf("call %d: C thread's region has no record", call)
	}
	goid := lp64(rec + l.U(lineageabi.OffRecGoid))
	if fl := lineageabi.P16(rec + l.U(lineageabi.OffRecFlags)); fl&8 == 0 || goid == 0 {
		return fmt.Errorf("call %d: record goid %d flags %#x, want a cgo callback record", call, goid, fl)
	}
	// A goroutine started here has the callback goroutine as parent.
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cr := l.Region(uint64(syscall.Gettid()))
		if cr == 0 {
			done <- fmt.Errorf("child: no region")
			return
		}
		c := uintptr(lp64(cr + l.U(lineageabi.OffRegionCur)))
		if c == 0 {
			done <- fmt.Errorf("child: no record")
			return
		}
		// anc[0] is the callback goroutine's site entry.
		site := lp64(rec + l.U(lineageabi.OffRecSite))
		if n, pg, a0, fl := lineageabi.P16(c+l.U(lineageabi.OffRecNanc)), lp64(c+l.U(lineageabi.OffRecParentGoid)), lp64(c+l.U(lineageabi.OffRecAnc)), lineageabi.P16(c+l.U(lineageabi.OffRecFlags)); n != 1 || pg != goid || a0 != site || fl != 0 {
			done <- fmt.Errorf("child: nanc %d parent %d anc[0] %#x flags %#x, want 1, %d, %#x, 0", n, pg, a0, fl, goid, site)
			return
		}
		done <- nil
	}()
	return <-done
}

func LineageCgoCallback() {
	hdr, err := lineageabi.FindInExecutable()
	h := uintptr(hdr)
	if err != nil {
		fmt.Println("FAIL:", err)
		return
	}
	if lp32(h+lineageabi.OffFlags)&2 == 0 {
		fmt.Println("FAIL: lineage records disabled")
		return
	}
	linHdrAddr = h
	if C.lineageRunCThread() != 0 {
		fmt.Println("FAIL: pthread")
		return
	}
	for i := 0; i < 2; i++ {
		if err := <-linRes; err != nil {
			fmt.Println("FAIL:", err)
			return
		}
	}
	// The C thread has exited: its region must be free.
	if r := hdr.Region(linCTid); r != 0 {
		fmt.Printf("FAIL: exited C thread %d still has active region %#x\n", linCTid, r)
		return
	}
	fmt.Println("OK")
}

// LineageCgoCallbackReturn checks what a C thread's region says while the
// thread runs C between two callbacks: it keeps its extra M (and so an
// active region with its tid), but runs no goroutine, so cur must be 0.
func LineageCgoCallbackReturn() {
	hdr, err := lineageabi.FindInExecutable()
	if err != nil {
		fmt.Println("FAIL:", err)
		return
	}
	if lp32(uintptr(hdr)+lineageabi.OffFlags)&2 == 0 {
		fmt.Println("FAIL: lineage records disabled")
		return
	}
	linHdrAddr = uintptr(hdr)
	joined := make(chan C.int)
	go func() { joined <- C.lineageRunWaitingCThread() }()
	if err := <-linRes; err != nil {
		fmt.Println("FAIL:", err)
		return
	}
	// The callback has returned to C, or is about to. A region that still
	// names the thread must stop naming a record, and keep it so.
	if r := hdr.Region(linCTid); r != 0 {
		cur := func() uint64 { return lp64(r + hdr.U(lineageabi.OffRegionCur)) }
		deadline := time.Now().Add(10 * time.Second)
		for cur() != 0 {
			if time.Now().After(deadline) {
				fmt.Printf("FAIL: C thread %d runs C, but its region's cur is %#x\n", linCTid, cur())
				return
			}
			time.Sleep(time.Millisecond)
		}
		for i := 0; i < 20; i++ {
			if c := cur(); c != 0 {
				fmt.Printf("FAIL: C thread %d runs C, but its region's cur became %#x\n", linCTid, c)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	C.lineageLetCThreadGoOn()
	if err := <-linRes; err != nil {
		fmt.Println("FAIL:", err)
		return
	}
	if <-joined != 0 {
		fmt.Println("FAIL: pthread")
		return
	}
	fmt.Println("OK")
}
