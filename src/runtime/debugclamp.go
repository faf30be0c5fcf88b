// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// One parsing rule for the fork's GODEBUG settings.
//
// Upstream's settings take whatever decimal int32 they are given and
// silently ignore anything else. The fork's settings (debugClampedVars)
// each have a range, and follow one rule instead:
//
//   - a decimal integer outside the range is clamped to the nearest bound
//     (lineage=-1 is lineage=0, lineage=100 is lineage=64,
//     memprofilefpunwindoff=2 is memprofilefpunwindoff=1);
//   - anything else (lineage=abc, lineage=0x10, lineage=) is ignored: the
//     setting keeps the value it had, its default at startup;
//
// and in both cases the runtime prints one line to stderr saying what it
// did, so that a mistyped setting is never silent. The rule applies to
// compile-time defaults, to $GODEBUG at startup and to run-time changes of
// $GODEBUG (os.Setenv) alike. Upstream's settings are parsed as before.

package runtime

import "internal/strconv"

// debugClampedVars lists the fork's GODEBUG settings and their ranges.
var debugClampedVars = [...]struct {
	name   string
	lo, hi int32
}{
	{"fpunwindcheck", 0, 2},
	{"goroutineprofilefpunwindoff", 0, 1},
	{"lineage", 0, lineageMaxLimit},
	{"lineageprofile", 0, 1},
	{"lineagestack", 0, lineageMaxLimit},
	{"memprofilefpunwindoff", 0, 1},
}

// parseDebugClamped returns the value the GODEBUG setting key=value gives
// its variable, and false if the variable is to keep its value.
func parseDebugClamped(key, value string) (int32, bool) {
	n, err := strconv.ParseInt(value, 10, 32)
	for _, c := range debugClampedVars {
		if c.name != key {
			continue
		}
		// ParseInt returns 0 for a syntax error and the nearest int32
		// for a decimal integer out of its range.
		if err != nil && n == 0 {
			print("runtime: ignoring GODEBUG ", key, "=", value, ": want a decimal integer from ", c.lo, " to ", c.hi, "\n")
			return 0, false
		}
		if n < int64(c.lo) || n > int64(c.hi) || err != nil {
			v := c.lo
			if n > int64(c.hi) {
				v = c.hi
			}
			print("runtime: GODEBUG ", key, "=", value, " is out of range ", c.lo, " to ", c.hi, "; using ", v, "\n")
			return v, true
		}
		return int32(n), true
	}
	return int32(n), err == nil
}
