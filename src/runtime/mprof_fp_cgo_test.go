// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build cgo

package runtime_test

import (
	"internal/testenv"
	"strings"
	"testing"
)

// TestGoroutineProfileFPCgo compares goroutine profiles with and without
// frame-pointer unwinding for goroutines in a cgo call and in a C-to-Go
// callback (which takes the slow path).
func TestGoroutineProfileFPCgo(t *testing.T) {
	if !fpArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	testenv.MustHaveCGO(t)
	got := runTestProg(t, "testprogcgo", "GoroutineProfileFPCgo")
	if strings.TrimSpace(got) != "OK" {
		t.Errorf("expected OK, got:\n%s", got)
	}
}
