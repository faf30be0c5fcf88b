// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fpunwindwork

import (
	"sync"
	"time"
)

// A goroutine stopped by asynchronous preemption in a frameless leaf: the
// tracer records its stack when it stops, where asyncPreempt's frame
// record holds the interrupted PC (not a return address) and the leaf's
// caller is in no frame record. The scheduler's monitor preempts a
// goroutine that has run for 10ms, so spinning for 100ms, nearly all of
// it in the leaf, is stopped there several times.
func init() {
	whileTracing = append(whileTracing, func(*sync.Mutex) {
		spinCaller(100 * time.Millisecond)
	})
}

var spinSink int

// spinCaller calls spinLeaf until d has passed.
//
//go:noinline
func spinCaller(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		spinSink += spinLeaf(1 << 22)
	}
}

// spinLeaf has no frame record: no calls, no locals.
//
//go:noinline
func spinLeaf(n int) (s int) {
	for i := range n {
		s += i ^ s>>3
	}
	return s
}
