// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !linux

package runtime

import "unsafe"

// memProfPopulate reports that it filled nothing: the pages fault one at
// a time, as persistentalloc's do.
func memProfPopulate(v unsafe.Pointer, n uintptr) bool { return false }
