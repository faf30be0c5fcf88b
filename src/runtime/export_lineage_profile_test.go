// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import "unsafe"

// LineageProfileDebugOffset is the offset of debug.lineageprofile, which
// sigprof loads to decide whether to append goroutine ancestry.
var LineageProfileDebugOffset = unsafe.Offsetof(debug.lineageprofile)

// LineageProfileCPUAppend does what sigprof does with lineageprofile=1 for
// a sample of n frames ending at runtime.goexit on the calling goroutine,
// and returns the sample's new length.
func LineageProfileCPUAppend(n int) int {
	var stk [maxCPUProfStack]uintptr
	stk[n-1] = lineageProfGoexitPC()
	return lineageProfCPUAppend(getg(), &stk, n)
}
