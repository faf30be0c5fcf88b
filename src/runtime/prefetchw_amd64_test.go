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

// TestPrefetchwCPUID checks internal/cpu's flag for PREFETCHW
// (X86.HasPRFCHW), which prefetchWrite tests, against the kernel's: Linux
// names the same bit (CPUID 0x80000001, ECX bit 8) 3dnowprefetch in
// /proc/cpuinfo. On AMD and Hygon CPUs Linux also sets the flag for every
// 64-bit CPU, whether or not the bit is set (a hypervisor may clear it),
// so there only a CPU without the flag is checked: the runtime must not
// use PREFETCHW on it.
func TestPrefetchwCPUID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/cpuinfo")
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	vendor := ""
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(name) {
		case "vendor_id":
			vendor = strings.TrimSpace(value)
		case "flags":
			want := slices.Contains(strings.Fields(value), "3dnowprefetch")
			got := runtime.PrefetchwOK()
			inferred := vendor == "AuthenticAMD" || vendor == "HygonGenuine"
			if got != want && (got || !inferred) {
				t.Errorf("prefetchwOK = %v; /proc/cpuinfo (%s) has 3dnowprefetch: %v", got, vendor, want)
			}
			return
		}
	}
	t.Skip("no flags line in /proc/cpuinfo")
}
