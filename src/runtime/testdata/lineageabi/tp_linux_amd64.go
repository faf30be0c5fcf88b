// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package lineageabi

import (
	"syscall"
	"unsafe"
)

// ThreadPointer returns this thread's FS base, the thread pointer a
// register-only lineage reader starts from.
func ThreadPointer() (uint64, bool, error) {
	var fs uint64
	const archGetFS = 0x1003
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetFS, uintptr(unsafe.Pointer(&fs)), 0); e != 0 {
		return 0, false, e
	}
	return fs, true, nil
}
