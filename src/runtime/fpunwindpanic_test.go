// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// panicLeafNil has no frame record (no calls, no locals): a fault in it
// makes the signal handler inject a call to sigpanic at the faulting PC.
//
//go:noinline
func panicLeafNil(p *int32) { atomic.AddInt32(p, 1) }

// panicLeafCaller calls panicLeafNil, which faults, and blocks in the
// deferred call that recovers, while the goroutine is panicking.
//
//go:noinline
func panicLeafCaller(ch chan int) {
	defer func() {
		recover()
		<-ch
	}()
	panicLeafNil(nil)
}

// TestBlockProfilePanicking checks the block profile's stack of a goroutine
// that blocks while it panics from a fault in a frameless leaf: it must
// hold the leaf's caller, which sigpanic's frame record skips (the return
// address into it lies at the leaf's SP), as gentraceback's stack does.
func TestBlockProfilePanicking(t *testing.T) {
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	ch := make(chan int)
	go func() {
		time.Sleep(10 * time.Millisecond)
		ch <- 1
	}()
	panicLeafCaller(ch)
	runtime.SetBlockProfileRate(0)

	found := false
	for _, names := range blockProfileFuncs() {
		i := slices.Index(names, "runtime_test.panicLeafNil")
		if i < 0 {
			continue
		}
		found = true
		if i+1 >= len(names) || names[i+1] != "runtime_test.panicLeafCaller" {
			t.Errorf("block profile stack lacks the frameless leaf's caller: %v", names)
		}
	}
	if !found {
		t.Errorf("no block profile record through panicLeafNil")
	}
}

// TestFPUnwindPanickingSignal checks that a goroutine counts as panicking
// from the signal that injects sigpanic on, before gopanic sets _panic:
// gopanic's prologue may be preempted, and the tracer then records its
// stack, with the frameless leaf's caller in no frame record.
func TestFPUnwindPanickingSignal(t *testing.T) {
	if runtime.FPUnwindPanickingWithSig(0) {
		t.Error("a goroutine with no signal and no panic counts as panicking")
	}
	if !runtime.FPUnwindPanickingWithSig(11) {
		t.Error("a goroutine with a signal pending (sigpanic injected) does not count as panicking")
	}
}
