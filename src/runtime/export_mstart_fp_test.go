// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/goarch"
	"unsafe"
)

// G0SchedFPReturn returns the return PC in the frame record that the
// current M's g0.sched.bp points at, or 0 if it points at none (zero, or
// below g0.sched.sp): the first frame of the chain of the code that runs
// after a gogo to g0.sched, as when goexit0 exits a thread whose locked
// goroutine exited.
func G0SchedFPReturn() uintptr {
	var pc uintptr
	systemstack(func() {
		g0 := getg().m.g0
		if fp := g0.sched.bp; fp != 0 && fp >= g0.sched.sp {
			pc = *(*uintptr)(unsafe.Pointer(fp + goarch.PtrSize))
		}
	})
	return pc
}
