// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// The goroutine profile must not change when the runtime records its
// stacks by frame-pointer unwinding (GODEBUG=goroutineprofilefpunwindoff
// switches between the two paths at run time).

package pprof

import (
	"bytes"
	"fmt"
	"internal/profile"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:noinline
func fpGoroutineDeep(d int, f func()) {
	if d > 0 {
		fpGoroutineDeep(d-1, f)
		return
	}
	f()
}

func TestGoroutineProfileFPDifferential(t *testing.T) {
	if !fpTestArch() {
		t.Skip("frame-pointer profiling is implemented for amd64 and arm64 only")
	}
	var mu sync.Mutex
	mu.Lock()
	done := make(chan struct{})
	var wg, started sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			fpGoroutineDeep(i%7*5, func() {
				switch i % 3 {
				case 0:
					<-done
				case 1:
					mu.Lock()
					mu.Unlock()
				case 2:
					select {
					case <-done:
					case <-time.After(time.Hour):
					}
				}
			})
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond)
	defer func() {
		close(done)
		mu.Unlock()
		wg.Wait()
	}()

	write := func(debugLevel int, off string) string {
		setGODEBUGForTest(t, "goroutineprofilefpunwindoff="+off)
		var buf bytes.Buffer
		if err := Lookup("goroutine").WriteTo(&buf, debugLevel); err != nil {
			t.Fatal(err)
		}
		if debugLevel != 0 {
			return buf.String()
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, s := range p.Sample {
			var b strings.Builder
			fmt.Fprintf(&b, "%d:", s.Value[0])
			for _, loc := range s.Location {
				for _, l := range loc.Line {
					fmt.Fprintf(&b, "%s:%d;", l.Function.Name, l.Line)
				}
			}
			lines = append(lines, b.String())
		}
		return strings.Join(lines, "\n")
	}
	for _, debugLevel := range []int{0, 1, 2} {
		var out []string
		for _, off := range []string{"0", "1", "0"} {
			out = append(out, write(debugLevel, off)) // one call site: the caller's stack is in the profile
		}
		fast, slow, fast2 := out[0], out[1], out[2]
		if !strings.Contains(fast, "fpGoroutineDeep") {
			t.Errorf("debug=%d: profile lacks the parked goroutines:\n%s", debugLevel, fast)
		}
		if debugLevel == 2 {
			// runtime.Stack output; only wait times could differ.
			continue
		}
		if fast != slow || fast != fast2 {
			t.Errorf("debug=%d: profiles differ:\nframe pointers:\n%s\nslow:\n%s\nframe pointers again:\n%s", debugLevel, fast, slow, fast2)
		}
	}
}
