// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Hooks for the GODEBUG=fpunwindcheck tests (fpunwindcheck_test.go).

package runtime

// SetFPUnwindCheck turns GODEBUG=fpunwindcheck on or off and returns the
// previous setting.
func SetFPUnwindCheck(on bool) bool {
	old := debug.fpunwindcheck != 0
	debug.fpunwindcheck = 0
	if on {
		debug.fpunwindcheck = 1
	}
	return old
}

// FPUnwindCheckCounts returns the fpunwindcheck counters of a site.
func FPUnwindCheckCounts(site string) (checked, mismatches uint64) {
	for i, name := range fpunwindcheckSiteNames {
		if name == site {
			return fpunwindcheckStats.checked[i].Load(), fpunwindcheckStats.mismatches[i].Load()
		}
	}
	panic("unknown fpunwindcheck site " + site)
}

// FPUnwindCheckInject makes the next fpunwindcheck comparison see an altered
// frame-pointer result.
func FPUnwindCheckInject() { fpunwindcheckStats.inject.Store(1) }
