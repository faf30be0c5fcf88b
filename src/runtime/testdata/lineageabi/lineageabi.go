// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package lineageabi is the lineage ABI reader shared by the runtime's
// lineage tests (lineage_test.go) and the test programs testprog and
// testprogcgo. Like an external tool, it knows nothing of the runtime but
// the documented ABI (doc/lineage-abi.md): it finds the header by its
// cookie and reads the process's own memory through the header's offsets.
// It holds the readers' one copy of the cookie.
package lineageabi

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Magic is the cookie that opens the header. It is a string constant, kept
// in read-only data, so that a reader's own copy never shows up in the
// .noptrdata section it searches.
const Magic = "\x7fGoLineage\x00\x00\xa5\x5a\xc3\x3c"

// Header field offsets (ABI version 1).
const (
	OffVersion    = 16
	OffHeaderSize = 20
	OffFlags      = 28
	OffSelf       = 32
	OffRegions    = 40
	OffNRegions   = 48
	OffRegionSize = 68
	OffTLSG       = 168
	HeaderSize    = 208 // at least, in version 1
)

// Header flags.
const (
	FlagReady   = 1 << 0
	FlagRecords = 1 << 1
	FlagStacks  = 1 << 2
	FlagTLS     = 1 << 3
)

// P64 and P32 read this process's memory at a.
func P64(a uintptr) uint64 { return *(*uint64)(unsafe.Pointer(a)) }
func P32(a uintptr) uint32 { return *(*uint32)(unsafe.Pointer(a)) }

// Header is a header in this process's memory.
type Header uintptr

// U returns the uint32 header field at off, an offset the header publishes.
func (h Header) U(off uintptr) uintptr { return uintptr(P32(uintptr(h) + off)) }

// Region returns the active region of thread tid, found through the
// registry (bounded by nregions), or 0.
func (h Header) Region(tid uint64) uintptr {
	a := uintptr(h)
	n := P64(a + OffNRegions)
	for r, i := uintptr(P64(a+OffRegions)), uint64(0); r != 0 && i < n; r, i = uintptr(P64(r+h.U(84))), i+1 {
		if P64(r+h.U(72))&1 == 0 && P32(r+h.U(92)) != 0 && P64(r+h.U(76)) == tid {
			return r
		}
	}
	return 0
}

// FindInExecutable finds the header from this process's executable file
// (which may be stripped) by its cookie in .noptrdata, adding the load bias
// from /proc/self/maps for position-independent executables. It checks the
// file's copy (version 1, run-time fields zero, 64-byte regions) and that
// the header in memory is ready and points to itself.
func FindInExecutable() (Header, error) {
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
		return 0, fmt.Errorf("no .noptrdata section")
	}
	data, err := sec.Data()
	if err != nil {
		return 0, err
	}
	var found []int
	for off := 0; off+HeaderSize <= len(data); off += 8 {
		if string(data[off:off+16]) == Magic {
			found = append(found, off)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("found %d cookies in .noptrdata", len(found))
	}
	fh := data[found[0]:]
	le := f.ByteOrder
	if v := le.Uint32(fh[OffVersion:]); v != 1 {
		return 0, fmt.Errorf("file header version %d", v)
	}
	if le.Uint64(fh[OffSelf:]) != 0 || le.Uint32(fh[OffFlags:]) != 0 {
		return 0, fmt.Errorf("run-time fields not zero in the file")
	}
	if rs := le.Uint32(fh[OffRegionSize:]); rs != 64 {
		return 0, fmt.Errorf("file region_size %d", rs)
	}
	addr := uintptr(sec.Addr) + uintptr(found[0])
	if f.Type == elf.ET_DYN {
		bias, err := loadBias(exe, f)
		if err != nil {
			return 0, err
		}
		addr += bias
	}
	if P64(addr+OffSelf) != uint64(addr) || P32(addr+OffFlags)&FlagReady == 0 {
		return 0, fmt.Errorf("header at %#x not ready or self %#x", addr, P64(addr+OffSelf))
	}
	return Header(addr), nil
}

func loadBias(exe string, f *elf.File) (uintptr, error) {
	// The lineage ABI's rule (section 2): a mapping of the same file,
	// matched by device and inode (not by path, which /proc/self/maps
	// prints unquoted), whose file offset lies in a PT_LOAD segment gives
	// bias = (map_start - map_offset) - (p_vaddr - p_offset).
	fi, err := os.Stat(exe)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no device and inode for %s", exe)
	}
	dev := uint64(st.Dev)
	wantDev := fmt.Sprintf("%02x:%02x", (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff)
	wantIno := strconv.FormatUint(uint64(st.Ino), 10)
	m, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer m.Close()
	s := bufio.NewScanner(m)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) < 6 || fl[3] != wantDev || fl[4] != wantIno {
			continue
		}
		off, err1 := strconv.ParseUint(fl[2], 16, 64)
		start, err2 := strconv.ParseUint(strings.Split(fl[0], "-")[0], 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && off >= p.Off&^0xfff && off < p.Off+p.Filesz {
				return uintptr((start - off) - (p.Vaddr - p.Off)), nil
			}
		}
	}
	return 0, fmt.Errorf("executable not in /proc/self/maps")
}
