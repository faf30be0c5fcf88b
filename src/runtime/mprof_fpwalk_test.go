// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"fmt"
	"internal/goarch"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestFPWalk checks that the frame-pointer walk (fpWalk) finds the
// physical return PCs the slow unwinder finds, from the walk's caller to
// the goroutine's first frame, at several depths. The walk also finds the
// go statement's wrapper that started the test (testing's
// (*T).Run.gowrap1), which callers() elides; fpLogicalPCs elides it too.
func TestFPWalk(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	for _, d := range []int{0, 5, 40, 200} {
		var fp, slow []uintptr
		fpgDeep(d, func() {
			buf := make([]uintptr, 512)
			fp = buf[:runtime.FPWalkHere(buf)]
			buf = make([]uintptr, 512)
			slow = buf[:runtime.CallersHere(buf)]
		})
		if len(slow) < d+3 || len(fp) < d+3 {
			t.Fatalf("depth %d: walked %d frames, callers %d; want at least %d", d, len(fp), len(slow), d+3)
		}
		wrappers := 0
		fp = slices.DeleteFunc(fp, func(pc uintptr) bool {
			f := runtime.FuncForPC(pc - 1)
			if f != nil && strings.Contains(f.Name(), ".gowrap") {
				wrappers++
				return true
			}
			return false
		})
		if wrappers != 1 {
			t.Errorf("depth %d: walk found %d go-statement wrappers, want 1", d, wrappers)
		}
		// The two calls return to different PCs of the closure; the
		// frames above it must be the same.
		if f, s := runtime.FuncForPC(fp[0]-1), runtime.FuncForPC(slow[0]-1); f == nil || s == nil || f.Name() != s.Name() {
			t.Errorf("depth %d: first frames in different functions: %#x, %#x", d, fp[0], slow[0])
		}
		if !slices.Equal(fp[1:], slow[1:]) {
			t.Errorf("depth %d: frame-pointer walk\n\t%#x\ndiffers from callers\n\t%#x", d, fp, slow)
		}
	}
}

// TestFPStackHash checks that the stack hash tells apart stacks that
// differ in one frame, in the order of two frames, in length or in the
// extra word.
func TestFPStackHash(t *testing.T) {
	base := uintptr(0x400000)
	for n := 1; n <= 48; n++ {
		stk := make([]uintptr, n+1)
		for i := range stk {
			stk[i] = base + 0x1000 + uintptr(i)*0x37
		}
		longer, stk := stk, stk[:n]
		seen := map[uintptr]string{runtime.FPStackHash(stk, 64): "the stack"}
		differs := func(what string, s []uintptr, extra uintptr) {
			t.Helper()
			h := runtime.FPStackHash(s, extra)
			if prev, ok := seen[h]; ok {
				t.Errorf("%d frames: %s hashes as %s: %#x", n, what, prev, h)
			}
			seen[h] = what
		}
		differs("extra+8", stk, 72)
		differs("the stack less its last frame", stk[:n-1], 64)
		differs("the stack and one more frame", longer, 64)
		for i := range n {
			for _, d := range []uintptr{1, 4, 1 << 20} {
				s := slices.Clone(stk)
				s[i] += d
				differs(fmt.Sprintf("frame %d + %#x", i, d), s, 64)
			}
			for j := i + 1; j < n; j++ {
				s := slices.Clone(stk)
				s[i], s[j] = s[j], s[i]
				differs(fmt.Sprintf("frames %d and %d swapped", i, j), s, 64)
			}
		}
	}
}

// TestFPStackTabEntry checks that a stack table entry stores the whole
// physical stack, and that lookups compare every PC: a stack that differs
// in any PC or in length finds nothing.
func TestFPStackTabEntry(t *testing.T) {
	phys := make([]uintptr, 33)
	for i := range phys {
		phys[i] = 0x401000 + uintptr(i)*0x40
	}
	others := [][]uintptr{phys[:len(phys)-1], append(slices.Clone(phys), 0x403000)}
	for _, i := range []int{0, 3, len(phys) - 1} {
		o := slices.Clone(phys)
		o[i]++
		others = append(others, o)
	}
	bytes, found, miss := runtime.FPStackTabEntry(phys, others)
	if want := runtime.FPStackEntryHeader + uintptr(len(phys))*goarch.PtrSize; bytes != want {
		t.Errorf("the entry took %d bytes, want %d", bytes, want)
	}
	if !found {
		t.Error("the stack does not find its entry")
	}
	for i, m := range miss {
		if !m {
			t.Errorf("%#x found the entry of %#x", others[i], phys)
		}
	}
}

// TestFPStackTabFirstInsertGrowingStack makes the first insert into a
// table, which maps its chain heads under the table's lock, at every
// depth of a new goroutine's stack in steps of 64 bytes. The lock is a
// leaf: in a runtime built with GOEXPERIMENT=staticlockranking (all.bash's
// lockrank step), growing the stack while it is held throws "lock ordering
// problem".
func TestFPStackTabFirstInsertGrowingStack(t *testing.T) {
	phys := []uintptr{0x401000, 0x401040, 0x401080}
	for depth := range 512 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			atStackDepth(depth, func() {
				if !runtime.FPStackTabFirstInsert(phys) {
					t.Errorf("depth %d: the stack does not find the entry it inserted", depth)
				}
			})
		}()
		<-done
	}
}

// atStackDepth calls f below n frames of 64 bytes or more.
//
//go:noinline
func atStackDepth(n int, f func()) {
	var pad [8]uintptr
	pad[n%8] = uintptr(n)
	if n == 0 {
		f()
	} else {
		atStackDepth(n-1, f)
	}
	runtime.KeepAlive(&pad)
}
