// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// SpecialProfileCounts stops the world and counts the heap profile
// specials: in use according to their fixalloc, attached to spans, in the
// Ps' caches and on the global list of batches (mprof_specialcache.go).
// bad counts the caches and batches that are not of a valid length and
// the spans whose list is not sorted by offset and kind or whose hint is
// not a profile special on the list.
func SpecialProfileCounts() (inuse, attached, cached, global, bad int) {
	stw := stopTheWorld(stwForTestReadMemStatsSlow)
	systemstack(func() {
		inuse = int(mheap_.specialprofilealloc.inuse / unsafe.Sizeof(specialprofile{}))
		for _, s := range mheap_.allspans {
			if s.state.get() != mSpanInUse {
				continue
			}
			hintFound := s.specialHint == nil
			for sp := s.specials; sp != nil; sp = sp.next {
				if sp.kind == _KindSpecialProfile {
					attached++
				} else if !spanSpecialsBit(s) {
					// markrootSpans would miss this special.
					bad++
				}
				if sp == s.specialHint && sp.kind == _KindSpecialProfile {
					hintFound = true
				}
				if n := sp.next; n != nil && (n.offset < sp.offset || n.offset == sp.offset && n.kind <= sp.kind) {
					bad++
				}
			}
			if !hintFound {
				bad++
			}
		}
		count := func(s *specialprofile) int {
			n := 0
			for ; s != nil; s = specialProfNext(s) {
				n++
			}
			return n
		}
		for _, pp := range allp {
			c := &pp.specialProfCache
			n := count(c.cur)
			if n != int(c.ncur) {
				bad++
			}
			if c.full != nil && count(c.full) != specialProfBatch {
				bad++
			}
			cached += n + count(c.full)
		}
		lock(&mheap_.speciallock)
		n := 0
		for h := specialProfFull.head; h != nil; h = (*specialprofile)(unsafe.Pointer(h.special.offset)) {
			if count(h) != specialProfBatch {
				bad++
			}
			global += specialProfBatch
			n++
		}
		if n != specialProfFull.n {
			bad++
		}
		unlock(&mheap_.speciallock)
	})
	startTheWorld(stw)
	return
}

// spanSpecialsBit reports whether s's bit in its arena's pageSpecials, the
// bitmap markrootSpans reads, is set.
func spanSpecialsBit(s *mspan) bool {
	arenaPage := (s.base() / pageSize) % pagesPerArena
	ai := arenaIndex(s.base())
	ha := mheap_.arenas[ai.l1()][ai.l2()]
	return atomic.Load8(&ha.pageSpecials[arenaPage/8])&(uint8(1)<<(arenaPage%8)) != 0
}

// SpecialProfileSpanBits stops the world and counts the in-use spans whose
// specials are all heap profile records, by whether their pageSpecials bit
// is set.
func SpecialProfileSpanBits() (set, clear int) {
	stw := stopTheWorld(stwForTestReadMemStatsSlow)
	systemstack(func() {
		for _, s := range mheap_.allspans {
			if s.state.get() != mSpanInUse || s.specials == nil {
				continue
			}
			only := true
			for sp := s.specials; sp != nil; sp = sp.next {
				only = only && sp.kind == _KindSpecialProfile
			}
			switch {
			case !only:
			case spanSpecialsBit(s):
				set++
			default:
				clear++
			}
		}
	})
	startTheWorld(stw)
	return
}
