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
