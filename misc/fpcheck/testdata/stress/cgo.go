package main

/*
#cgo CFLAGS: -O2 -fomit-frame-pointer
#include <pthread.h>
#include <stdint.h>

extern void goCallback(int, int);
extern void goFromCThread(int);

// cLoop calls back into Go with enough live values that the compiler keeps
// some in callee-saved registers, %rbp included: without frame pointers the
// frame-pointer register holds data when crosscall2 is entered.
static int cLoop(int n, int seed) {
	int a = seed, b = seed * 3, c = seed * 5, d = seed * 7, e = seed * 11, f = seed * 13, g = seed * 17;
	for (int i = 0; i < n; i++) {
		goCallback(i, a ^ g);
		a = a * 31 + b; b ^= c + i; c += d; d = d * 7 ^ e; e += f ^ a; f = f * 3 + i; g = g * 5 + a;
	}
	return a + b + c + d + e + f + g;
}

// cSpin burns CPU in C (samples with a C leaf).
static uint64_t cSpin(uint64_t n) {
	uint64_t x = n, y = 0x9e3779b97f4a7c15ULL, z = 7;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17; y += x; z = z * 3 + (y >> 5);
	}
	return x + y + z;
}

static void* threadMain(void* arg) {
	int n = (int)(intptr_t)arg;
	int a = n, b = n * 3, c = n * 5, d = n * 7, e = n * 11;
	for (int i = 0; i < n; i++) {
		goFromCThread(i ^ a);
		a = a * 31 + b; b ^= c + i; c += d; d = d * 7 ^ e; e += a;
	}
	return (void*)(intptr_t)(a + b + c + d + e);
}

// runCThread runs a C-created thread that calls Go n times and waits for it.
static int runCThread(int n) {
	pthread_t t;
	if (pthread_create(&t, 0, threadMain, (void*)(intptr_t)n) != 0) {
		return -1;
	}
	return pthread_join(t, 0);
}
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
)

var (
	callbacks  atomic.Int64
	cThreadOps atomic.Int64
	cbMu       sync.Mutex
	cbSink     []byte
)

//export goCallback
func goCallback(i, v C.int) {
	callbacks.Add(1)
	// Allocate (heap profile), contend (mutex/block profile), grow the stack.
	b := make([]byte, 64+int(i)%128)
	b[0] = byte(v)
	cbMu.Lock()
	cbSink = b
	cbMu.Unlock()
	if i%64 == 0 {
		recurse(32, nil)
	}
	if i%256 == 0 {
		runtime.Gosched()
	}
}

//export goFromCThread
func goFromCThread(i C.int) {
	cThreadOps.Add(1)
	b := make([]byte, 96)
	b[1] = byte(i)
	cbMu.Lock()
	cbSink = b
	cbMu.Unlock()
	if i%32 == 0 {
		recurse(48, nil)
	}
}

func cgoCallbacks(n int) int { return int(C.cLoop(C.int(n), C.int(n+1))) }

func cgoSpin(n uint64) uint64 { return uint64(C.cSpin(C.uint64_t(n))) }

func cThread(n int) int { return int(C.runCThread(C.int(n))) }
