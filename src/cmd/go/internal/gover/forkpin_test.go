// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package gover

import (
	"strings"
	"testing"
)

func TestTooNewErrorForkPin(t *testing.T) {
	defer func(v, tc string) { TestVersion, Startup.GOTOOLCHAIN = v, tc }(TestVersion, Startup.GOTOOLCHAIN)
	t.Setenv("GOTOOLCHAIN", "") // as if only go.env set it

	err := &TooNewError{What: "go.mod", GoVersion: "1.28"}
	Startup.GOTOOLCHAIN = "local"

	TestVersion = "go1.27.3-fork1"
	msg := err.Error()
	for _, want := range []string{"running go 1.27.3", "go1.27.3-fork1 is a fork of go1.27.3", "GOTOOLCHAIN=local in its go.env", "go line to 1.27.3 or older", "upstream go1.28", "GOTOOLCHAIN=auto"} {
		if !strings.Contains(msg, want) {
			t.Errorf("fork toolchain: error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("fork toolchain: error %q spans lines", msg)
	}

	TestVersion = "go1.27.3"
	if msg := err.Error(); strings.Contains(msg, "fork") {
		t.Errorf("upstream toolchain: error %q mentions a fork", msg)
	}

	TestVersion = "go1.27.3-fork1"
	Startup.GOTOOLCHAIN = "auto"
	if msg := err.Error(); strings.Contains(msg, "fork") {
		t.Errorf("GOTOOLCHAIN=auto: error %q mentions a fork", msg)
	}
}
