// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// DebugVar returns the value of the GODEBUG setting name in dbgvars, and
// false if there is no such setting.
func DebugVar(name string) (int32, bool) {
	for _, v := range dbgvars {
		if v.name == name {
			if v.value != nil {
				return *v.value, true
			}
			return v.atomic.Load(), true
		}
	}
	return 0, false
}
