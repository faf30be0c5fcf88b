// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build cgo

package runtime_test

import (
	"internal/testenv"
	"strings"
	"testing"
)

// TestGoroutineProfileFPCgo compares goroutine profiles with and without
// frame-pointer unwinding for goroutines in a cgo call and in a C-to-Go
// callback. Both take the frame-pointer path unless a cgo traceback function
// is registered (fpUnwindNeedsCgoTraceback).
func TestGoroutineProfileFPCgo(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	testenv.MustHaveCGO(t)
	got := runTestProg(t, "testprogcgo", "GoroutineProfileFPCgo")
	if strings.TrimSpace(got) != "OK" {
		t.Errorf("expected OK, got:\n%s", got)
	}
}

// TestFPUnwindCheckCgo runs the same program under GODEBUG=fpunwindcheck=2
// with every allocation sampled: the frame-pointer walks of the heap and
// goroutine profiles, in cgo calls and callbacks too, must each match the
// slow unwinder.
func TestFPUnwindCheckCgo(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	testenv.MustHaveCGO(t)
	got := runTestProg(t, "testprogcgo", "GoroutineProfileFPCgo", "GODEBUG=fpunwindcheck=2,memprofilerate=1")
	if !strings.Contains(got, "OK\n") {
		t.Errorf("expected OK, got:\n%s", got)
	}
	for _, want := range []string{"site=heap checked=", "site=goroutine checked=", " mismatches=0\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fpunwindcheck: mismatch") {
		t.Errorf("frame-pointer unwinds differ from the slow unwinder:\n%s", got)
	}
}
