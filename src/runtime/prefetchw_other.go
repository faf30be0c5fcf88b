// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !amd64 && !arm64

package runtime

import "internal/runtime/sys"

// prefetchWrite starts fetching the line at addr (see prefetchw.go).
func prefetchWrite(addr uintptr) {
	sys.Prefetch(addr)
}

// prefetchWrite3 starts fetching the lines at a, b and c.
func prefetchWrite3(a, b, c uintptr) {
	sys.Prefetch(a)
	sys.Prefetch(b)
	sys.Prefetch(c)
}
