// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fpunwindwork

import (
	"io"
	"runtime"
	"runtime/trace"
)

// A goroutine that has never run when the tracer ends a generation: the
// tracer records the status of every goroutine it has not seen in the
// generation, with its stack, here its entry alone. With one P and
// nothing that blocks between trace.Start and trace.Stop, a goroutine
// created just before trace.Start has not run when trace.Stop records
// the statuses.
func init() {
	ownTrace = append(ownTrace, func() error {
		procs := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(procs)
		ran := make(chan bool, 1)
		go func() { ran <- true }()
		if err := trace.Start(io.Discard); err != nil {
			return err
		}
		trace.Stop()
		<-ran
		return nil
	})
}
