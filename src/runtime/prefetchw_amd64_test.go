// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestPrefetchwCPUID checks the runtime's CPUID test for PREFETCHW
// against the kernel's: Linux names the same bit (CPUID 0x80000001, ECX
// bit 8) 3dnowprefetch in /proc/cpuinfo.
func TestPrefetchwCPUID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/cpuinfo")
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	for line := range strings.Lines(string(b)) {
		name, flags, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "flags" {
			continue
		}
		want := slices.Contains(strings.Fields(flags), "3dnowprefetch")
		if got := runtime.PrefetchwOK(); got != want {
			t.Errorf("prefetchwOK = %v; /proc/cpuinfo has 3dnowprefetch: %v", got, want)
		}
		return
	}
	t.Skip("no flags line in /proc/cpuinfo")
}
