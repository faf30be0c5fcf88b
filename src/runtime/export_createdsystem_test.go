// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// SystemGoroutineCount is the scheduler's count of live system goroutines
// (sched.ngsys), which newproc1 raises and gdestroy lowers by the
// goroutine's createdSystem.
func SystemGoroutineCount() int32 { return sched.ngsys.Load() }
