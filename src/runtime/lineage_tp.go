// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build linux && (amd64 || arm64)

package runtime

// lineageThreadPointer returns the calling thread's TLS base (FS base on
// amd64, TPIDR_EL0 on arm64), or 0 if it cannot be read.
func lineageThreadPointer() uintptr
