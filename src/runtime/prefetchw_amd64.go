// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import (
	"internal/cpu"
	"unsafe"
)

// offsetX86HasPRFCHW is the offset in cpu.X86 of the flag prefetchw_amd64.s
// tests: whether the CPU executes PREFETCHW (CPUID 0x80000001, ECX bit 8).
const offsetX86HasPRFCHW = unsafe.Offsetof(cpu.X86.HasPRFCHW)
