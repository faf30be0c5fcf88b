// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

// A lineage ABI reader that knows nothing of the runtime: it finds the
// header by its cookie in its own executable file (which may be stripped),
// then reads its own memory through the header's offsets only.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

func init() {
	register("LineageStack", LineageStack)
}

var linMagic = []byte{0x7f, 'G', 'o', 'L', 'i', 'n', 'e', 'a', 'g', 'e', 0, 0, 0xa5, 0x5a, 0xc3, 0x3c}

func lp64(a uintptr) uint64 { return *(*uint64)(unsafe.Pointer(a)) }
func lp32(a uintptr) uint32 { return *(*uint32)(unsafe.Pointer(a)) }

// linFindHeader returns the header's address from the ELF file alone.
func linFindHeader() (uintptr, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return 0, fmt.Errorf("SKIP: not a static-address executable (%v)", f.Type)
	}
	sec := f.Section(".noptrdata")
	if sec == nil {
		return 0, fmt.Errorf("no .noptrdata section")
	}
	data, err := sec.Data()
	if err != nil {
		return 0, err
	}
	var found []int
	for off := 0; off+208 <= len(data); off += 8 {
		if bytes.Equal(data[off:off+16], linMagic) {
			found = append(found, off)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("found %d cookies in .noptrdata", len(found))
	}
	h := data[found[0]:]
	le := binary.LittleEndian
	if v := le.Uint32(h[16:]); v != 1 {
		return 0, fmt.Errorf("file header version %d", v)
	}
	if le.Uint64(h[32:]) != 0 || le.Uint32(h[28:]) != 0 {
		return 0, fmt.Errorf("run-time fields not zero in the file")
	}
	if rs := le.Uint32(h[68:]); rs != 64 {
		return 0, fmt.Errorf("file region_size %d", rs)
	}
	return uintptr(sec.Addr) + uintptr(found[0]), nil
}

func LineageStack() {
	if err := lineageStack(); err != nil {
		if strings.HasPrefix(err.Error(), "SKIP") {
			fmt.Println(err)
			return
		}
		fmt.Println("FAIL:", err)
		return
	}
	fmt.Println("OK")
}

//go:noinline
func lineageStack() error {
	h, err := linFindHeader()
	if err != nil {
		return err
	}
	if lp64(h+32) != uint64(h) {
		return fmt.Errorf("self %#x at %#x", lp64(h+32), h)
	}
	if flags := lp32(h + 28); flags&7 != 7 {
		return fmt.Errorf("flags %#x, want READY|RECORDS|STACKS", flags)
	}
	res := make(chan error)
	lineageF1(h, res)
	return <-res
}

//go:noinline
func lineageF1(h uintptr, res chan error) { lineageF2(h, res) }

//go:noinline
func lineageF2(h uintptr, res chan error) { lineageF3(h, res) }

//go:noinline
func lineageF3(h uintptr, res chan error) { go lineageLeaf(h, res) }

func lineageLeaf(h uintptr, res chan error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res <- lineageCheckLeaf(h)
}

func lineageCheckLeaf(h uintptr) error {
	u := func(off uintptr) uintptr { return uintptr(lp32(h + off)) }
	tid := uint64(syscall.Gettid())
	var region uintptr
	n := lp64(h + 48)
	for r, i := uintptr(lp64(h+40)), uint64(0); r != 0 && i < n; r, i = uintptr(lp64(r+u(84))), i+1 {
		if lp64(r+u(72))&1 == 0 && lp32(r+u(92)) != 0 && lp64(r+u(76)) == tid {
			region = r
		}
	}
	if region == 0 {
		return fmt.Errorf("no region for tid %d", tid)
	}
	if fs, ok, err := linThreadPointer(); err != nil {
		return err
	} else if lp32(h+28)&8 != 0 && ok {
		// Register-only path: FS base + tls_g_offset -> g -> m -> region.
		g := uintptr(lp64(uintptr(int64(fs) + int64(lp64(h+168)))))
		m := uintptr(lp64(g + u(156)))
		if r := uintptr(lp64(m + u(160))); r != region {
			return fmt.Errorf("TLS path gives region %#x, registry %#x", r, region)
		}
	}
	rec := uintptr(lp64(region + u(80)))
	if rec == 0 {
		return fmt.Errorf("region has no current record")
	}
	s1 := lp64(rec + u(96))
	nstk := lp32(rec + u(120))
	gopc := lp64(rec + u(108))
	var names []string
	for i := uintptr(0); i < uintptr(nstk); i++ {
		pc := uintptr(lp64(rec + u(152) + 8*i))
		if i == 0 && uint64(pc) != gopc {
			return fmt.Errorf("stack[0] %#x != gopc %#x", pc, gopc)
		}
		names = append(names, runtime.FuncForPC(pc-1).Name())
	}
	if s2 := lp64(rec + u(96)); s1 != s2 || s1&1 != 0 {
		return fmt.Errorf("record changed under a stopped writer: seq %d %d", s1, s2)
	}
	want := []string{"main.lineageF3", "main.lineageF2", "main.lineageF1", "main.lineageStack", "main.LineageStack", "main.main"}
	if len(names) < len(want) {
		return fmt.Errorf("creation stack %v, want prefix %v", names, want)
	}
	for i, w := range want {
		if names[i] != w {
			return fmt.Errorf("creation stack %v, want prefix %v", names, want)
		}
	}
	if lp32(rec+u(124))&2 != 0 {
		return fmt.Errorf("stack of %d frames marked truncated: %v", nstk, names)
	}
	return nil
}
