// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// prefetchwOK reports whether the CPU executes PREFETCHW (CPUID
// 0x80000001, ECX bit 8). Until init sets it, prefetchWrite uses the read
// prefetch.
var prefetchwOK bool

func init() {
	prefetchwOK = prefetchwSupported()
}

// prefetchwSupported reports whether the CPU reports PREFETCHW.
func prefetchwSupported() bool
