// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

// A lineage ABI reader that knows nothing of the runtime
// (runtime/testdata/lineageabi): it finds the header by its cookie in its
// own executable file (which may be stripped), then reads its own memory
// through the header's offsets only.

import (
	"fmt"
	"runtime"
	"runtime/testdata/lineageabi"
	"strings"
	"syscall"
)

func init() {
	register("LineageStack", LineageStack)
}

var (
	lp64 = lineageabi.P64
	lp32 = lineageabi.P32
)

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
	hdr, err := lineageabi.FindInExecutable()
	if err != nil {
		return err
	}
	h := uintptr(hdr)
	if flags := lp32(h + lineageabi.OffFlags); flags&7 != 7 {
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
	hdr := lineageabi.Header(h)
	u := hdr.U
	tid := uint64(syscall.Gettid())
	region := hdr.Region(tid)
	if region == 0 {
		return fmt.Errorf("no region for tid %d", tid)
	}
	if fs, ok, err := lineageabi.ThreadPointer(); err != nil {
		return err
	} else if lp32(h+lineageabi.OffFlags)&8 != 0 && ok {
		// Register-only path: FS base + tls_g_offset -> g -> m -> region.
		g := uintptr(lp64(uintptr(int64(fs) + int64(lp64(h+lineageabi.OffTLSG)))))
		m := uintptr(lp64(g + u(lineageabi.OffGM)))
		if r := uintptr(lp64(m + u(lineageabi.OffMRegion))); r != region {
			return fmt.Errorf("TLS path gives region %#x, registry %#x", r, region)
		}
	}
	rec := uintptr(lp64(region + u(lineageabi.OffRegionCur)))
	if rec == 0 {
		return fmt.Errorf("region has no current record")
	}
	s1 := lp64(rec + u(lineageabi.OffRecSeq))
	nstk := lineageabi.P16(rec + u(lineageabi.OffRecNstk))
	gopc := lp64(h+lineageabi.OffTextBase) + uint64(lp32(rec+u(lineageabi.OffRecSite)+u(lineageabi.OffAncGopc)))
	var names []string
	for i := uintptr(0); i < uintptr(nstk); i++ {
		pc := uintptr(lp64(rec + u(lineageabi.OffRecStack) + 8*i))
		if i == 0 && uint64(pc) != gopc {
			return fmt.Errorf("stack[0] %#x != gopc %#x", pc, gopc)
		}
		names = append(names, runtime.FuncForPC(pc-1).Name())
	}
	if s2 := lp64(rec + u(lineageabi.OffRecSeq)); s1 != s2 || s1&1 != 0 {
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
	if lineageabi.P16(rec+u(lineageabi.OffRecFlags))&2 != 0 {
		return fmt.Errorf("stack of %d frames marked truncated: %v", nstk, names)
	}
	return nil
}
