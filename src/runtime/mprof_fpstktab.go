// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Persistent tables from physical to logical stacks.
//
// The heap profiler (mprof_heapfp.go) and the goroutine profile
// (mprof_goroutinefp.go) both walk frame pointers and must then turn the
// physical stack into what the slow unwinder records, which costs a
// pcvalue decode per frame. Both remember the answer per physical stack in
// an fpStackTab, so that a stack seen before costs one hash lookup:
//
//   - memProfStacks maps a physical stack and an allocation size to the
//     memory profile bucket of its logical stack (entry.bucket).
//   - goroutineProfStacks maps a physical stack to its logical stack,
//     stored inline after it (entry.logic), which goroutine profile
//     records share.
//
// An entry can also say that its stack must take the slow path
// (entry.slow): the frame-pointer result was not confirmed.
//
// A table is a fixed array of bucket heads, allocated on the first insert,
// with chains of entries in persistent memory. Entries are immutable once
// published, never freed, and pushed onto their chain with a CAS, so
// lookups take no lock and may run anywhere mProf_Malloc or the goroutine
// profile runs. A duplicate from a racing insert is harmless: lookups find
// the newer one first. A table with a byte limit stops adding entries once
// its entries reach it; one without grows like the profile buckets it
// points to.

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

// fpStackTab is a lock-free persistent hash table keyed by a physical stack,
// a word (key) and a flag.
type fpStackTab struct {
	name     string  // for sysAlloc accounting
	nbuckets uintptr // power of two
	maxBytes uintptr // limit of the entries' bytes; 0 for none

	buckets atomic.UnsafePointer // *[nbuckets]atomic.UnsafePointer (*fpStackEntry)
	bytes   atomic.Uintptr       // bytes of entries allocated
	lock    mutex                // serializes the allocation of buckets
}

// fpStackEntry is one physical stack (nphys PCs, stored after it) and what
// it maps to: a logical stack of nlogic PCs stored after those, and/or a
// bucket.
type fpStackEntry struct {
	_      sys.NotInHeap
	next   *fpStackEntry
	hash   uintptr
	key    uintptr
	bucket *bucket // heap profile: the bucket of the logical stack
	nphys  uint32
	nlogic uint32
	flag   bool
	slow   bool // the frame-pointer result cannot be trusted: take the slow path
}

func (e *fpStackEntry) phys() []uintptr {
	return unsafe.Slice((*uintptr)(add(unsafe.Pointer(e), unsafe.Sizeof(*e))), e.nphys)
}

func (e *fpStackEntry) logic() []uintptr {
	return unsafe.Slice((*uintptr)(add(unsafe.Pointer(e), unsafe.Sizeof(*e)+uintptr(e.nphys)*goarch.PtrSize)), e.nlogic)
}

func (t *fpStackTab) head(h uintptr) *atomic.UnsafePointer {
	tab := t.buckets.Load()
	if tab == nil {
		return nil
	}
	return (*atomic.UnsafePointer)(add(tab, (h&(t.nbuckets-1))*goarch.PtrSize))
}

// prefetch starts fetching the chain head where a lookup of hash h begins.
func (t *fpStackTab) prefetch(h uintptr) {
	if head := t.head(h); head != nil {
		sys.Prefetch(uintptr(unsafe.Pointer(head)))
	}
}

// lookup returns the entry for phys, key and flag, whose hash is h, or nil.
func (t *fpStackTab) lookup(h uintptr, phys []uintptr, key uintptr, flag bool) *fpStackEntry {
	head := t.head(h)
	if head == nil {
		return nil
	}
	for e := (*fpStackEntry)(head.Load()); e != nil; e = e.next {
		if e.hash == h && e.key == key && e.flag == flag && eqslice(e.phys(), phys) {
			return e
		}
	}
	return nil
}

// fpMapOnce stores into *p, if it is nil, size bytes of zeroed memory
// mapped for the profiles' tables under name. It runs on the system stack:
// l, which serializes the mapping, is a leaf, and the stack must not grow
// while it is held.
func fpMapOnce(p *atomic.UnsafePointer, l *mutex, size uintptr, name string) {
	systemstack(func() {
		lock(l)
		if p.Load() == nil {
			m := sysAlloc(size, &memstats.buckhash_sys, name)
			if m == nil {
				throw("runtime: cannot allocate memory")
			}
			p.StoreNoWB(m)
		}
		unlock(l)
	})
}

// insert publishes an entry for phys, key and flag, whose hash is h, that
// maps to logic and b, or says slow. It returns the entry, an equal one
// published before, or nil if the table is full.
func (t *fpStackTab) insert(h uintptr, phys []uintptr, key uintptr, flag bool, logic []uintptr, b *bucket, slow bool) *fpStackEntry {
	if e := t.lookup(h, phys, key, flag); e != nil {
		return e
	}
	size := unsafe.Sizeof(fpStackEntry{}) + uintptr(len(phys)+len(logic))*goarch.PtrSize
	if t.maxBytes != 0 && t.bytes.Load()+size > t.maxBytes {
		return nil
	}
	head := t.head(h)
	if head == nil {
		fpMapOnce(&t.buckets, &t.lock, t.nbuckets*goarch.PtrSize, t.name)
		head = t.head(h)
	}
	t.bytes.Add(size)
	e := (*fpStackEntry)(persistentalloc(size, goarch.PtrSize, &memstats.buckhash_sys))
	e.hash = h
	e.key = key
	e.flag = flag
	e.bucket = b
	e.slow = slow
	e.nphys = uint32(len(phys))
	e.nlogic = uint32(len(logic))
	copy(e.phys(), phys)
	copy(e.logic(), logic)
	for {
		old := head.Load()
		e.next = (*fpStackEntry)(old)
		if head.CompareAndSwapNoWB(old, unsafe.Pointer(e)) {
			return e
		}
	}
}
