// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package work

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestToolIDForkRelease checks how the go command keys a tool from its
// -V=full line: by the whole line for a release, by the content ID of the
// build ID when the tool prints one (a development version, or a release
// with a suffix, which cmd/internal/objabi prints it for).
func TestToolIDForkRelease(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("the fake tool is a shell script")
	}
	defer func(old string) { VetTool = old }(VetTool)
	for _, tc := range []struct{ line, want string }{
		{"vet version go1.27.3", "vet version go1.27.3"},
		{"vet version go1.27.3 X:nofieldtrack", "vet version go1.27.3 X:nofieldtrack"},
		{"vet version go1.27.3-fpsafe1 buildID=aaa/bbb/ccc/ddd", "ddd"},
		{"vet version go1.27.3-fpsafe1 X:nofieldtrack buildID=aaa/bbb/ccc/eee", "eee"},
		{"vet version devel go1.28-0123456789 buildID=aaa/bbb/ccc/fff", "fff"},
	} {
		VetTool = filepath.Join(t.TempDir(), "vet")
		if err := os.WriteFile(VetTool, []byte("#!/bin/sh\necho '"+tc.line+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		var b Builder
		if got := b.toolID("vet"); got != tc.want {
			t.Errorf("-V=full %q: toolID = %q, want %q", tc.line, got, tc.want)
		}
	}
}
