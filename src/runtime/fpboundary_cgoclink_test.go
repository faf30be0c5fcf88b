// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build cgo && linux && (amd64 || arm64)

package runtime_test

import (
	"strings"
	"testing"
)

// TestFPBoundaryCgoCLink runs testprogcgo's FPChainCLink: C frames between
// a cgo call and its callback stay in the callback's frame-pointer chain
// when they keep frame pointers (at -O0 and -O2), and are left out, as
// before, when they do not or when one corrupts its frame record; checked
// after stack growth and with Go->C->Go->C->Go recursion. With
// GODEBUG=fpunwindcheck=2, the runtime's frame-pointer unwinders, run in
// linked callbacks, must match gentraceback.
func TestFPBoundaryCgoCLink(t *testing.T) {
	t.Parallel()
	out := runTestProg(t, "testprogcgo", "FPChainCLink", "GODEBUG=fpunwindcheck=2")
	if !strings.Contains(out, "\nOK\n") {
		t.Fatalf("FPChainCLink:\n%s", out)
	}
	for _, want := range []string{"linked O0: ", "linked O2: ", "fpunwindcheck: site=heap ", "fpunwindcheck: site=goroutine ",
		"fpunwindcheck: site=block ", "fpunwindcheck: site=mutex ", "fpunwindcheck: site=trace "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in output:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"linked corrupt", "fpunwindcheck: mismatch"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("%q in output:\n%s", unwanted, out)
		}
	}
	if !strings.Contains(out, " mismatches=0\nfpunwindcheck: checked=") || !strings.HasSuffix(strings.TrimSpace(out[strings.LastIndex(out, "fpunwindcheck: checked="):]), "mismatches=0") {
		t.Errorf("fpunwindcheck found mismatches:\n%s", out)
	}
}
