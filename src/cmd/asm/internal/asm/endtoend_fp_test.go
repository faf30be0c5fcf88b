// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package asm

import "testing"

// TOPFRAME functions and the caller's frame pointer; see
// cmd/internal/obj/fpcheck.go.

func TestAMD64FramePointerErrors(t *testing.T) {
	testErrors(t, "amd64", "amd64fperror")
}

func TestARM64FramePointerErrors(t *testing.T) {
	testErrors(t, "arm64", "arm64fperror")
}
