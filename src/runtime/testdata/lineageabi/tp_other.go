// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !(linux && amd64)

package lineageabi

// ThreadPointer reports that the thread pointer is not read here; readers
// check the registry path instead.
func ThreadPointer() (uint64, bool, error) { return 0, false, nil }
