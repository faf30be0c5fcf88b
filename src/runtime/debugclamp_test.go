// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime_test

import (
	"fmt"
	"internal/testenv"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestDebugClamp checks the fork's GODEBUG rule (debugclamp.go): out of
// range values clamp to the nearest bound, unparsable ones are ignored, and
// either is reported on stderr. Each case runs the test binary with GODEBUG
// set, since most settings are read only at startup.
func TestDebugClamp(t *testing.T) {
	if name := os.Getenv("RUNTIME_TEST_DEBUGCLAMP"); name != "" {
		v, ok := runtime.DebugVar(name)
		fmt.Printf("%s=%d %v\n", name, v, ok)
		return
	}
	testenv.MustHaveExec(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		godebug, name, want, stderr string
	}{
		{"lineage=16", "lineage", "16", ""},
		{"lineage=abc", "lineage", "8", "runtime: ignoring GODEBUG lineage=abc: want a decimal integer from 0 to 64"},
		{"lineage=0x10", "lineage", "8", "runtime: ignoring GODEBUG lineage=0x10: want a decimal integer from 0 to 64"},
		{"lineage=", "lineage", "8", "runtime: ignoring GODEBUG lineage=: want a decimal integer from 0 to 64"},
		{"lineage=-1", "lineage", "0", "runtime: GODEBUG lineage=-1 is out of range 0 to 64; using 0"},
		{"lineage=100", "lineage", "64", "runtime: GODEBUG lineage=100 is out of range 0 to 64; using 64"},
		{"lineagestack=99999999999", "lineagestack", "64", "runtime: GODEBUG lineagestack=99999999999 is out of range 0 to 64; using 64"},
		{"memprofilefpunwindoff=2", "memprofilefpunwindoff", "1", "runtime: GODEBUG memprofilefpunwindoff=2 is out of range 0 to 1; using 1"},
		{"goroutineprofilefpunwindoff=-3", "goroutineprofilefpunwindoff", "0", "runtime: GODEBUG goroutineprofilefpunwindoff=-3 is out of range 0 to 1; using 0"},
		{"fpunwindcheck=on", "fpunwindcheck", "0", "runtime: ignoring GODEBUG fpunwindcheck=on: want a decimal integer from 0 to 2"},
		// Upstream's settings keep upstream's parsing.
		{"profstackdepth=abc", "profstackdepth", "128", ""},
	} {
		cmd := testenv.Command(t, exe, "-test.run=^TestDebugClamp$")
		cmd.Env = append(os.Environ(), "GODEBUG="+tc.godebug, "RUNTIME_TEST_DEBUGCLAMP="+tc.name)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("GODEBUG=%s: %v\n%s", tc.godebug, err, stderr.String())
			continue
		}
		if want := tc.name + "=" + tc.want + " true\n"; !strings.HasPrefix(string(out), want) {
			t.Errorf("GODEBUG=%s: got %q, want %q", tc.godebug, out, want)
		}
		if got := strings.TrimSpace(stderr.String()); got != tc.stderr {
			t.Errorf("GODEBUG=%s: stderr %q, want %q", tc.godebug, got, tc.stderr)
		}
	}
}
