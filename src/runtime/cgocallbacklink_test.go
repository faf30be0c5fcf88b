// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build linux && (amd64 || arm64)

package runtime_test

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestCgoLinkWalk runs cgocallback's walk over C's frame records
// (cgocallbacklink.go) on synthetic records: it must accept exactly a
// bounded, strictly increasing chain within the stack bounds that ends at
// the goroutine's record.
func TestCgoLinkWalk(t *testing.T) {
	// stack holds the "C" records, 16-byte aligned; want is elsewhere.
	var buf [2*runtime.CgoLinkMaxRecords*2 + 8]uintptr
	base := (uintptr(unsafe.Pointer(&buf[0])) + 15) &^ 15
	lo, hi := base, uintptr(unsafe.Pointer(&buf[len(buf)-1]))+8
	rec := func(i int) uintptr { return base + uintptr(i)*16 } // record i
	set := cgoLinkPoke
	var goRecord [2]uintptr
	want := uintptr(unsafe.Pointer(&goRecord[0]))
	// chain links n records from record 0 upwards, the last to want.
	chain := func(n int) {
		for i := 0; i < n-1; i++ {
			set(rec(i), rec(i+1))
		}
		set(rec(n-1), want)
	}

	tests := []struct {
		name  string
		setup func() (fp uintptr)
		last  uintptr // 0: must not link
	}{
		{"one record", func() uintptr { chain(1); return rec(0) }, rec(0)},
		{"three records", func() uintptr { chain(3); return rec(0) }, rec(2)},
		{"longest", func() uintptr { chain(runtime.CgoLinkMaxRecords); return rec(0) }, rec(runtime.CgoLinkMaxRecords - 1)},
		{"too long", func() uintptr { chain(runtime.CgoLinkMaxRecords + 1); return rec(0) }, 0},
		{"no C frames", func() uintptr { return want }, 0},
		{"zero", func() uintptr { return 0 }, 0},
		{"below the bounds", func() uintptr { chain(2); return lo - 16 }, 0},
		{"above the bounds", func() uintptr { return hi }, 0},
		// Alignment is not checked: what matters is the exact arrival at want.
		{"misaligned", func() uintptr { chain(2); set(rec(0), rec(1)+4); set(rec(1)+4, want); return rec(0) }, rec(1) + 4},
		{"misaligned, ends elsewhere", func() uintptr { chain(2); set(rec(0), rec(1)+4); set(rec(1)+4, want+8); return rec(0) }, 0},
		{"loop", func() uintptr { set(rec(0), rec(1)); set(rec(1), rec(0)); return rec(0) }, 0},
		{"to itself", func() uintptr { set(rec(0), rec(0)); return rec(0) }, 0},
		{"garbage", func() uintptr { chain(3); set(rec(1), 0x0badf00dbadf00d0); return rec(0) }, 0},
		{"ends elsewhere", func() uintptr { chain(3); set(rec(2), want+16); return rec(0) }, 0},
		{"ends at zero", func() uintptr { chain(3); set(rec(2), 0); return rec(0) }, 0},
	}
	for _, tt := range tests {
		clear(buf[:])
		fp := tt.setup()
		if got := runtime.CgoLinkWalk(fp, want, lo, hi); got != tt.last {
			t.Errorf("%s: got %#x, want %#x", tt.name, got, tt.last)
		}
	}
	// An extra M's goroutine has no frame record to link to.
	clear(buf[:])
	chain(2)
	set(rec(1), 0)
	if got := runtime.CgoLinkWalk(rec(0), 0, lo, hi); got != 0 {
		t.Errorf("want == 0: got %#x, want 0", got)
	}
}

// cgoLinkPoke stores v at address at, inside a test's buffer: the
// walk's records are addresses, so -race's pointer checks, which reject a
// pointer made from an integer, are off here.
//
//go:nocheckptr
func cgoLinkPoke(at, v uintptr) { *(*uintptr)(unsafe.Pointer(at)) = v }
