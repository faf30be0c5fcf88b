// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package objabi

import (
	"internal/buildcfg"
	"internal/testenv"
	"os"
	"strings"
	"testing"
)

// TestVersionFlagBuildID checks that -V=full prints the tool's build ID
// for a development version and for a release with a suffix (a fork,
// rebuilt with changes under one version string), so that the go command
// keys its cache by the tool's content, and not for a plain release.
func TestVersionFlagBuildID(t *testing.T) {
	if v := os.Getenv("OBJABI_TEST_VERSION"); v != "" {
		buildcfg.Version = v
		buildID = "abc/def"
		versionFlag{}.Set("full") // exits
		t.Fatal("-V=full did not exit")
	}
	testenv.MustHaveExec(t)
	exe := testenv.Executable(t)
	for _, tc := range []struct {
		version string
		buildID bool
	}{
		{"go1.27.3", false},
		{"go1.27.3-fpsafe1", true},
		{"devel go1.28-0123456789 Mon Jan 1 00:00:00 2026 +0000", true},
	} {
		cmd := testenv.Command(t, exe, "-test.run=^TestVersionFlagBuildID$")
		cmd.Env = append(os.Environ(), "OBJABI_TEST_VERSION="+tc.version)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.version, err, out)
		}
		line := strings.TrimSpace(string(out))
		if !strings.Contains(line, " version "+tc.version) {
			t.Errorf("%s: -V=full printed %q, want the version", tc.version, line)
		}
		if got := strings.HasSuffix(line, " buildID=abc/def"); got != tc.buildID {
			t.Errorf("%s: -V=full printed %q; build ID printed: %v, want %v", tc.version, line, got, tc.buildID)
		}
	}
}
