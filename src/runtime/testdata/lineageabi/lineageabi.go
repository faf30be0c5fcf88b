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
	"debug/elf"
	"fmt"
	"os"
	"unsafe"
)

// Magic is the cookie that opens the header. It is a string constant, kept
// in read-only data, so that a reader's own copy never shows up in the
// .noptrdata section it searches.
const Magic = "\x7fGoLineage\x00\x00\xa5\x5a\xc3\x3c"

// Version is the ABI version these offsets describe.
const Version = 2

// Header field offsets (ABI version 2, doc/lineage-abi.md). All fields are
// u32 but those named u64 or i64 in the doc.
const (
	OffVersion       = 16
	OffHeaderSize    = 20
	OffPtrSize       = 24
	OffFlags         = 28 // rt
	OffSelf          = 32 // rt, u64
	OffRegions       = 40 // rt, u64
	OffNRegions      = 48 // rt, u64
	OffMaxDepth      = 56 // rt
	OffMaxStack      = 60 // rt
	OffRecordSize    = 64 // rt
	OffRegionSize    = 68
	OffRegionSeq     = 72
	OffRegionTid     = 76
	OffRegionCur     = 80
	OffRegionNext    = 84
	OffRegionMid     = 88
	OffRegionState   = 92
	OffRecSeq        = 96
	OffRecG          = 100
	OffRecGoid       = 104
	OffRecParentGoid = 108
	OffRecNanc       = 112 // u16 field
	OffRecNstk       = 116 // u16 field
	OffRecFlags      = 120 // u16 field
	OffRecDepth      = 124
	OffRecSite       = 128
	OffRecAnc        = 132
	OffAncSize       = 136
	OffAncStart      = 140
	OffAncGopc       = 144
	OffRecStack      = 148 // rt
	OffGM            = 152
	OffMRegion       = 156
	OffGRecord       = 160
	OffRecChanges    = 164
	OffTLSG          = 168 // rt, i64
	OffTextBase      = 176 // rt, u64
	OffBlocks        = 184 // rt, u64
	OffNBlocks       = 192 // rt, u64
	OffWaitReasons   = 200 // rt, u64
	OffNWaitReasons  = 208
	OffStringSize    = 212
	OffBlockHdrSize  = 216
	OffBlockNext     = 220
	OffBlockNrec     = 224
	OffBlockUsed     = 228
	OffGGoid         = 232
	OffGStatus       = 236
	OffGTransitions  = 240
	OffGWaitReason   = 244
	OffGWaitSince    = 248
	OffGSchedSP      = 252
	OffGSchedPC      = 256
	OffGSchedBP      = 260
	OffGSyscallSP    = 264
	OffGSyscallPC    = 268
	OffGSyscallBP    = 272
	OffGStackLo      = 276
	OffGStackHi      = 280
	OffGWaiting      = 284
	OffSudogWaitlink = 288
	OffSudogElem     = 292
	OffSudogC        = 296
	OffSudogIsSelect = 300
	OffStatusScan    = 304
	OffStatusMap     = 308 // [16]u8
	OffGLabels       = 324
	OffLabelsList    = 328
	OffLabelSize     = 332
	OffLabelKey      = 336
	OffLabelValue    = 340
	HeaderSize       = 376
)

// RunTime lists the fields the runtime fills in at run time, marked *[rt]*
// in the doc's tables: offset and size. Every other header byte is in the
// executable file as it is in memory.
var RunTime = [][2]int{
	{OffFlags, 4}, {OffSelf, 8}, {OffRegions, 8}, {OffNRegions, 8},
	{OffMaxDepth, 4}, {OffMaxStack, 4}, {OffRecordSize, 4}, {OffRecStack, 4},
	{OffTLSG, 8}, {OffTextBase, 8}, {OffBlocks, 8}, {OffNBlocks, 8}, {OffWaitReasons, 8},
}

// IsRunTime reports whether header byte off belongs to a run-time field.
func IsRunTime(off int) bool {
	for _, f := range RunTime {
		if off >= f[0] && off < f[0]+f[1] {
			return true
		}
	}
	return false
}

// Header flags.
const (
	FlagReady   = 1 << 0
	FlagRecords = 1 << 1
	FlagStacks  = 1 << 2
	FlagTLS     = 1 << 3
)

// P64, P32, P16 and P8 read this process's memory at a, and Bytes the n
// bytes from a, as a reader outside the process reads them: from an
// address alone. So they are exempt from -race's pointer checks
// (checkptr), which reject a pointer made from an integer that points
// into the Go heap or a goroutine stack.
//
//go:nocheckptr
func P64(a uintptr) uint64 { return *(*uint64)(unsafe.Pointer(a)) }

//go:nocheckptr
func P32(a uintptr) uint32 { return *(*uint32)(unsafe.Pointer(a)) }

//go:nocheckptr
func P16(a uintptr) uint16 { return *(*uint16)(unsafe.Pointer(a)) }

//go:nocheckptr
func P8(a uintptr) uint8 { return *(*uint8)(unsafe.Pointer(a)) }

//go:nocheckptr
func Bytes(a uintptr, n int) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(a)), n) }

// Header is a header in this process's memory.
type Header uintptr

// U returns the uint32 header field at off, an offset the header publishes.
func (h Header) U(off uintptr) uintptr { return uintptr(P32(uintptr(h) + off)) }

// Region returns the active region of thread tid, found through the
// registry (bounded by nregions), or 0.
func (h Header) Region(tid uint64) uintptr {
	a := uintptr(h)
	r0 := uintptr(P64(a + OffRegions)) // the head, then the count
	n := P64(a + OffNRegions)
	for r, i := r0, uint64(0); r != 0 && i < n; r, i = uintptr(P64(r+h.U(OffRegionNext))), i+1 {
		if P64(r+h.U(OffRegionSeq))&1 == 0 && P32(r+h.U(OffRegionState)) != 0 && P64(r+h.U(OffRegionTid)) == tid {
			return r
		}
	}
	return 0
}

// FindInExecutable finds the header from this process's executable file
// (which may be stripped) by its cookie in .noptrdata, adding the load bias
// from /proc/self/maps for position-independent executables. It checks the
// file's copy against memory: every byte equal but those of the run-time
// fields (RunTime), which are zero in the file; the header in memory is
// ready and points to itself.
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
	if v := le.Uint32(fh[OffVersion:]); v != Version {
		return 0, fmt.Errorf("file header version %d, want %d", v, Version)
	}
	if hs := le.Uint32(fh[OffHeaderSize:]); hs != HeaderSize {
		return 0, fmt.Errorf("file header_size %d, want %d", hs, HeaderSize)
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
	if err := CompareFile(fh[:HeaderSize], Bytes(addr, HeaderSize)); err != nil {
		return 0, err
	}
	return Header(addr), nil
}

// CompareFile checks a header as the executable file holds it against the
// header in memory: the run-time fields are zero in the file, every other
// byte is the same in both.
func CompareFile(file, mem []byte) error {
	for i := 0; i < HeaderSize; i++ {
		switch {
		case IsRunTime(i) && file[i] != 0:
			return fmt.Errorf("header byte %d (a run-time field) is %#x in the file, want 0", i, file[i])
		case !IsRunTime(i) && file[i] != mem[i]:
			return fmt.Errorf("header byte %d is %#x in the file, %#x in memory", i, file[i], mem[i])
		}
	}
	return nil
}
