// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Perfprog spends its time in cgo callbacks from two levels of C, for
// checking with perf which frames a frame-pointer unwinder sees in them
// (doc/benchmarks.md, "Frame-pointer chains"). Build it with
// CGO_CFLAGS="-O2 -fno-omit-frame-pointer" or "-O2 -fomit-frame-pointer".
// The optional argument is how long to run (default 2s).
package main

/*
#include <stdint.h>
extern void goWork(int);
static volatile uint64_t csink;
__attribute__((noinline)) static void c_leaf_work(int n) { for (int i = 0; i < n*1000; i++) csink += i*i; }
__attribute__((noinline)) static void c_middle(int n) { c_leaf_work(n); goWork(n); csink++; }
__attribute__((noinline)) static void c_top(int n) { c_middle(n); csink++; }
*/
import "C"

import (
	"fmt"
	"os"
	"time"
)

var sink uint64

//export goWork
func goWork(n C.int) {
	work(int(n))
}

//go:noinline
func work(n int) {
	var buf [256]uint64
	for i := 0; i < n*20000; i++ {
		buf[i%256] += uint64(i) * 7
	}
	sink += buf[3]
	if n > 1 {
		grow(n * 8) // move the stack during the callback
	}
}

//go:noinline
func grow(n int) uint64 {
	var pad [512]byte
	pad[n%512] = byte(n)
	if n == 0 {
		return uint64(pad[0])
	}
	return grow(n-1) + uint64(pad[(n+1)%512])
}

func main() {
	d := 2 * time.Second
	if len(os.Args) > 1 {
		d, _ = time.ParseDuration(os.Args[1])
	}
	calls := 0
	for start := time.Now(); time.Since(start) < d; calls++ {
		C.c_top(C.int(1 + calls%3))
	}
	fmt.Println("calls", calls, sink)
}
