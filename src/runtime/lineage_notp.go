// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !(linux && (amd64 || arm64))

package runtime

// lineageThreadPointer: readers on these ports find regions by thread id.
func lineageThreadPointer() uintptr { return 0 }
