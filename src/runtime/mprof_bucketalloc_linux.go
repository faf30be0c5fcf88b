// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import "unsafe"

// _MADV_POPULATE_WRITE (Linux 5.14) faults in the pages of a range for
// writing, in one call. Its value is the same on every architecture.
const _MADV_POPULATE_WRITE = 23

// memProfPopulate asks the kernel to fill n bytes at v, which are mapped
// and not yet touched, and reports whether it did.
func memProfPopulate(v unsafe.Pointer, n uintptr) bool {
	return madvise(v, n, _MADV_POPULATE_WRITE) == 0
}
