// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package cgocbold

import "testing"

// BenchmarkCgoCallback is one cgo call whose C code (two levels) calls
// back into an empty Go function, per op: with C keeping frame pointers,
// the fork links them (a walk of four frame records), and without.
func BenchmarkCgoCallback(b *testing.B) {
	b.Run("cfp=keep", func(b *testing.B) {
		for i := range b.N {
			CallFP(i)
		}
	})
	b.Run("cfp=omit", func(b *testing.B) {
		for i := range b.N {
			CallNoFP(i)
		}
	})
}
