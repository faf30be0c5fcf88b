// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the tests of the write prefetches (prefetchw_test.go).

package runtime

// PrefetchWrite and PrefetchWrite3 are the write prefetches of prefetchw.go.
var (
	PrefetchWrite  = prefetchWrite
	PrefetchWrite3 = prefetchWrite3
)
