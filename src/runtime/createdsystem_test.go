// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"runtime"
	"testing"
	"time"
)

// TestSystemGoroutineCount checks the count of system goroutines across
// their lives: newproc1 classifies a goroutine once (createdSystem) and
// gdestroy lowers the count by that classification rather than by a
// second lookup of the start function. A goroutine that starts at a
// runtime function is a system goroutine (isSystemGoroutine); one that
// starts at a function of this package is not.
func TestSystemGoroutineCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 100
	for try := 0; ; try++ {
		// Goroutines of earlier tests may still be exiting: each try
		// takes its own baseline, and a count that comes out short of
		// the goroutines started here is tried again.
		sys0, user0 := runtime.SystemGoroutineCount(), runtime.NumGoroutine()
		// With one P, none of them runs before this goroutine blocks,
		// unless it is preempted: then try again.
		for range n {
			go runtime.Gosched()
		}
		for range n {
			go func() {}()
		}
		sys1, user1 := runtime.SystemGoroutineCount(), runtime.NumGoroutine()
		// Wait for every goroutine started here to exit. The system count
		// must come back exactly; NumGoroutine may end lower, when a
		// goroutine of an earlier test exited meanwhile.
		deadline := time.Now().Add(10 * time.Second)
		for runtime.SystemGoroutineCount() != sys0 || runtime.NumGoroutine() > user0 {
			if time.Now().After(deadline) {
				t.Fatalf("goroutines started at runtime.Gosched and at a closure exited: system goroutines %d -> %d, NumGoroutine %d -> %d; want the system count back and NumGoroutine at most %[3]d", sys0, runtime.SystemGoroutineCount(), user0, runtime.NumGoroutine())
			}
			time.Sleep(time.Millisecond)
		}
		if sys1 == sys0+n && user1 == user0+n {
			return
		}
		if try == 10 {
			t.Fatalf("after starting %d goroutines at runtime.Gosched and %d at a closure: system goroutines %d -> %d, want +%d; NumGoroutine %d -> %d, want +%d", n, n, sys0, sys1, n, user0, user1, n)
		}
	}
}
