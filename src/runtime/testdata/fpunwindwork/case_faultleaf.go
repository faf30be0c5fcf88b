// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fpunwindwork

import (
	"sync"
	"sync/atomic"
	"time"
)

// Faults in a frameless leaf, recovered, with trace events in the deferred
// call while the goroutine panics: sigpanic's frame record holds the
// faulting PC and skips the leaf's caller.
func init() {
	whileTracing = append(whileTracing, func(mu *sync.Mutex) {
		for range 3 {
			faultInLeaf(mu)
		}
	})
}

// faultInLeaf calls a frameless leaf that faults, and sleeps and locks in
// the deferred call that recovers.
//
//go:noinline
func faultInLeaf(mu *sync.Mutex) {
	defer func() {
		recover()
		mu.Lock()
		time.Sleep(time.Microsecond)
		mu.Unlock()
	}()
	nilLeaf(nil)
}

// nilLeaf has no frame record: no calls, no locals.
//
//go:noinline
func nilLeaf(p *int32) { atomic.AddInt32(p, 1) }
