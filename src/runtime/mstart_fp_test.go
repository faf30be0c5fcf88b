// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"testing"
)

// TestG0SchedFP checks that g0.sched, which mstart1 sets to return to
// mstart0, holds mstart0's frame pointer too: code run after a gogo to it
// (mexit, when a thread exits with its locked goroutine) then has a
// frame-pointer chain that continues to mstart, as gentraceback's does.
func TestG0SchedFP(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("frame pointers are checked on amd64 and arm64 only")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	name := "none"
	if pc := runtime.G0SchedFPReturn(); pc != 0 {
		name = "?"
		if f := runtime.FuncForPC(pc - 1); f != nil {
			name = f.Name()
		}
	}
	if name != "runtime.mstart" {
		t.Errorf("frame record at g0.sched.bp returns to %s, want runtime.mstart", name)
	}
}
