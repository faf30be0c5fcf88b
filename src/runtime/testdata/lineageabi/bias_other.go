// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !linux

package lineageabi

import (
	"debug/elf"
	"errors"
)

func loadBias(exe string, f *elf.File) (uintptr, error) {
	return 0, errors.New("load bias: reads /proc/self/maps (Linux only)")
}
