// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build cgo && linux && (amd64 || arm64)

package runtime_test

import (
	"strings"
	"testing"
)

// TestFPBoundaryCgoCallback runs testprogcgo's FPChainCallback: C calls
// back into Go with a frame pointer that points nowhere, on a Go-created
// and on a C-created thread, with CPU profiling and the execution tracer
// on. In the callbacks the frame-pointer chain must match runtime.Callers
// (go.dev/issue/59401: callback frames linked to C's frame pointer;
// go.dev/issue/59830: the C-to-Go reentersyscall window), and the tracer's
// and the block and mutex profilers' frame-pointer stacks must match it too
// (go.dev/issue/73664, 74851). The same run with GODEBUG=tracefpunwindoff=1
// (the slow path) must print the same stacks.
func TestFPBoundaryCgoCallback(t *testing.T) {
	t.Parallel()
	fast := runTestProg(t, "testprogcgo", "FPChainCallback")
	if !strings.HasSuffix(fast, "OK\n") {
		t.Fatalf("frame-pointer path:\n%s", fast)
	}
	slow := runTestProg(t, "testprogcgo", "FPChainCallback", "GODEBUG=tracefpunwindoff=1")
	if !strings.HasSuffix(slow, "OK\n") {
		t.Fatalf("GODEBUG=tracefpunwindoff=1:\n%s", slow)
	}
	if fast != slow {
		t.Errorf("stacks differ between the frame-pointer and the slow path:\nframe pointers:\n%s\ntracefpunwindoff=1:\n%s", fast, slow)
	}
	for _, want := range []string{"block go:", "block c:", "mutex go:", "mutex c:", "trace go:", "trace c:"} {
		if !strings.Contains(fast, want) {
			t.Errorf("no %q stack in output:\n%s", want, fast)
		}
	}
}

// TestFPBoundaryCgoCLink runs testprogcgo's FPChainCLink: C frames between
// a cgo call and its callback stay in the callback's frame-pointer chain
// when they keep frame pointers (at -O0 and -O2), and are left out, as
// before, when they do not or when one corrupts its frame record; checked
// after stack growth and with Go->C->Go->C->Go recursion. With
// GODEBUG=fpunwindcheck=2, the runtime's frame-pointer unwinders, run in
// linked callbacks, must match gentraceback.
func TestFPBoundaryCgoCLink(t *testing.T) {
	t.Parallel()
	out := runTestProg(t, "testprogcgo", "FPChainCLink", "GODEBUG=fpunwindcheck=2")
	if !strings.Contains(out, "\nOK\n") {
		t.Fatalf("FPChainCLink:\n%s", out)
	}
	for _, want := range []string{"linked O0: ", "linked O2: ", "fpunwindcheck: site=heap ", "fpunwindcheck: site=goroutine ",
		"fpunwindcheck: site=block ", "fpunwindcheck: site=mutex ", "fpunwindcheck: site=trace "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in output:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"linked corrupt", "fpunwindcheck: mismatch"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("%q in output:\n%s", unwanted, out)
		}
	}
	if !strings.Contains(out, " mismatches=0\nfpunwindcheck: checked=") || !strings.HasSuffix(strings.TrimSpace(out[strings.LastIndex(out, "fpunwindcheck: checked="):]), "mismatches=0") {
		t.Errorf("fpunwindcheck found mismatches:\n%s", out)
	}
}
