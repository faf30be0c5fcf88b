// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the tests of the heap profile's stack index (mprof_fpindex_test.go).

package runtime

import (
	"internal/goarch"
	"unsafe"
)

// FPIndex is an fpIndex (mprof_fpindex.go) and the chained table behind
// it, of its own, whose buckets are tags: a test compares them and never
// follows them.
type FPIndex struct {
	t   fpIndex
	tab fpStackTab
}

// Free unmaps the index's slots and its table's chain heads, so that the
// next insert into each maps them again.
func (x *FPIndex) Free() {
	if p := x.t.slots.Load(); p != nil {
		sysFree(p, fpIndexSlots*unsafe.Sizeof(fpIndexSlot{}), &memstats.buckhash_sys)
		x.t.slots.StoreNoWB(nil)
	}
	if p := x.tab.buckets.Load(); p != nil {
		sysFree(p, x.tab.nbuckets*goarch.PtrSize, &memstats.buckhash_sys)
		x.tab.buckets.StoreNoWB(nil)
	}
}

// FPIndexBase is the smallest PC a slot can hold.
func FPIndexBase() uintptr { return fpIndexBase() }

const (
	FPIndexPCs   = fpIndexPCs
	FPIndexProbe = fpIndexProbe
	FPIndexSlots = fpIndexSlots
)

// FPIndex lookup results.
const (
	FPIndexFound = int(fpIndexFound)
	FPIndexRoom  = int(fpIndexRoom)
	FPIndexFull  = int(fpIndexFull)
)

func (x *FPIndex) Insert(h uintptr, phys []uintptr, key uintptr, flag bool, tag uintptr) bool {
	return x.t.insert(h, phys, key, flag, (*bucket)(unsafe.Pointer(tag)))
}

func (x *FPIndex) Lookup(h uintptr, phys []uintptr, key uintptr, flag bool) (tag uintptr, status int) {
	s, st := x.t.lookup(h, phys, key, flag)
	if st == fpIndexFound {
		return uintptr(unsafe.Pointer(s.b)), int(st)
	}
	return 0, int(st)
}

// InsertTable inserts into the chained table behind the index, as the
// heap profile does on a stack's first sighting.
func (x *FPIndex) InsertTable(h uintptr, phys []uintptr, key uintptr, flag bool, tag uintptr, slow bool) {
	if x.tab.nbuckets == 0 {
		x.tab = fpStackTab{name: "test", nbuckets: 1 << 6}
	}
	x.tab.insert(h, phys, key, flag, nil, (*bucket)(unsafe.Pointer(tag)), slow)
}

// Find is what the heap profile does with a stack it walked.
func (x *FPIndex) Find(h uintptr, phys []uintptr, key uintptr, flag bool) (tag uintptr, slow, found bool) {
	if x.tab.nbuckets == 0 {
		x.tab = fpStackTab{name: "test", nbuckets: 1 << 6}
	}
	b, slow, found := x.t.find(&x.tab, h, phys, key, flag)
	return uintptr(unsafe.Pointer(b)), slow, found
}
