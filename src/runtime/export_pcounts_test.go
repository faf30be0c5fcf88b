// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// MemProfPublished reports whether the Ps count sampled allocations
// themselves (mprof_pcounts.go).
func MemProfPublished() bool {
	return memProfPublished.Load()
}
