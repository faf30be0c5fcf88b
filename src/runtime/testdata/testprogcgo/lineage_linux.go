// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

// Goroutine lineage on an extra M: a C-created thread calls into Go. The
// reader below knows nothing of the runtime; it finds the lineage ABI header
// by its cookie in the executable file and reads memory through its offsets.

/*
extern int lineageRunCThread(void);
*/
import "C"

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

func init() {
	register("LineageCgoCallback", LineageCgoCallback)
}

var linMagic = []byte{0x7f, 'G', 'o', 'L', 'i', 'n', 'e', 'a', 'g', 'e', 0, 0, 0xa5, 0x5a, 0xc3, 0x3c}

func lp64(a uintptr) uint64 { return *(*uint64)(unsafe.Pointer(a)) }
func lp32(a uintptr) uint32 { return *(*uint32)(unsafe.Pointer(a)) }

// linHeader finds the header from the executable file, adding the load bias
// from /proc/self/maps for position-independent executables.
func linHeader() (uintptr, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sec := f.Section(".noptrdata")
	if sec == nil {
		return 0, fmt.Errorf("no .noptrdata")
	}
	data, err := sec.Data()
	if err != nil {
		return 0, err
	}
	off := -1
	for o := 0; o+208 <= len(data); o += 8 {
		if bytes.Equal(data[o:o+16], linMagic) {
			if off >= 0 {
				return 0, fmt.Errorf("two cookies")
			}
			off = o
		}
	}
	if off < 0 {
		return 0, fmt.Errorf("no cookie")
	}
	addr := uintptr(sec.Addr) + uintptr(off)
	if f.Type == elf.ET_DYN {
		bias, err := linBias(exe, f)
		if err != nil {
			return 0, err
		}
		addr += bias
	}
	if lp64(addr+32) != uint64(addr) || lp32(addr+28)&1 == 0 {
		return 0, fmt.Errorf("header at %#x not ready or self %#x", addr, lp64(addr+32))
	}
	return addr, nil
}

func linBias(exe string, f *elf.File) (uintptr, error) {
	var first *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			first = p
			break
		}
	}
	m, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer m.Close()
	s := bufio.NewScanner(m)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) < 6 || fl[5] != exe {
			continue
		}
		if o, _ := strconv.ParseUint(fl[2], 16, 64); o != first.Off&^0xfff {
			continue
		}
		start, _ := strconv.ParseUint(strings.Split(fl[0], "-")[0], 16, 64)
		return uintptr(start - first.Vaddr&^0xfff), nil
	}
	return 0, fmt.Errorf("executable not in /proc/self/maps")
}

type linThread struct{ h uintptr }

func (l linThread) u(off uintptr) uintptr { return uintptr(lp32(l.h + off)) }

// region finds the active region of thread tid through the registry.
func (l linThread) region(tid uint64) uintptr {
	n := lp64(l.h + 48)
	for r, i := uintptr(lp64(l.h+40)), uint64(0); r != 0 && i < n; r, i = uintptr(lp64(r+l.u(84))), i+1 {
		if lp64(r+l.u(72))&1 == 0 && lp32(r+l.u(92)) != 0 && lp64(r+l.u(76)) == tid {
			return r
		}
	}
	return 0
}

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
	l := linThread{linHdrAddr}
	tid := uint64(syscall.Gettid())
	linCTid = tid
	r := l.region(tid)
	if r == 0 {
		return fmt.Errorf("call %d: no region for C thread %d", call, tid)
	}
	if st := lp32(r + l.u(92)); st != 2 {
		return fmt.Errorf("call %d: region state %d, want 2 (extra M)", call, st)
	}
	if fs, ok, err := linThreadPointer(); err != nil {
		return err
	} else if lp32(l.h+28)&8 != 0 && ok {
		g := uintptr(lp64(uintptr(int64(fs) + int64(lp64(l.h+168)))))
		m := uintptr(lp64(g + l.u(156)))
		if got := uintptr(lp64(m + l.u(160))); got != r {
			return fmt.Errorf("TLS path (offset %d) gives region %#x, registry %#x", int64(lp64(l.h+168)), got, r)
		}
	}
	rec := uintptr(lp64(r + l.u(80)))
	if rec == 0 {
		return fmt.Errorf("call %d: C thread's region has no record", call)
	}
	goid := lp64(rec + l.u(100))
	if fl := lp32(rec + l.u(124)); fl&8 == 0 || goid == 0 {
		return fmt.Errorf("call %d: record goid %d flags %#x, want a cgo callback record", call, goid, fl)
	}
	// A goroutine started here has the callback goroutine as parent.
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cr := l.region(uint64(syscall.Gettid()))
		if cr == 0 {
			done <- fmt.Errorf("child: no region")
			return
		}
		c := uintptr(lp64(cr + l.u(80)))
		if c == 0 {
			done <- fmt.Errorf("child: no record")
			return
		}
		if n, pg, a0, fl := lp32(c+l.u(116)), lp64(c+l.u(112)), lp64(c+l.u(132)+l.u(140)), lp32(c+l.u(124)); n != 1 || pg != goid || a0 != goid || fl != 0 {
			done <- fmt.Errorf("child: nanc %d parent %d anc[0] %d flags %#x, want 1, %d, %d, 0", n, pg, a0, fl, goid, goid)
			return
		}
		done <- nil
	}()
	return <-done
}

func LineageCgoCallback() {
	h, err := linHeader()
	if err != nil {
		fmt.Println("FAIL:", err)
		return
	}
	if lp32(h+28)&2 == 0 {
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
	if r := (linThread{h}).region(linCTid); r != 0 {
		fmt.Printf("FAIL: exited C thread %d still has active region %#x\n", linCTid, r)
		return
	}
	fmt.Println("OK")
}
