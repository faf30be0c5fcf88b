// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestPrefetchWrite checks that the write prefetches never fault, on
// addresses no program may touch (the zero page, the top of the address
// space, non-canonical and kernel addresses), and never change the memory
// they fetch.
func TestPrefetchWrite(t *testing.T) {
	buf := make([]byte, 1<<12)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	base := uintptr(unsafe.Pointer(&buf[0]))
	addrs := []uintptr{
		0, 1, 64, 4095,
		base, base + 63, base + 64, base + uintptr(len(buf)) - 1,
		^uintptr(0), ^uintptr(0) - 63,
	}
	if unsafe.Sizeof(uintptr(0)) == 8 {
		addrs = append(addrs,
			uintptr(1)<<47,              // past user space on amd64 and arm64
			uintptr(0xffff800000000000), // kernel space on amd64
			uintptr(0x8000000000000000), // non-canonical
		)
	}
	for _, a := range addrs {
		runtime.PrefetchWrite(a)
		for _, b := range addrs {
			runtime.PrefetchWrite3(a, b, base)
		}
	}
	runtime.KeepAlive(buf)
	for i := range buf {
		if want := byte(i*7 + 3); buf[i] != want {
			t.Fatalf("buf[%d] = %d after the prefetches, want %d", i, buf[i], want)
		}
	}
}
