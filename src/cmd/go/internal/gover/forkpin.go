// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package gover

// A toolchain built with a version suffix (go1.2.3-fpsafe1, say) is a fork
// of a release, and its $GOROOT/go.env pins GOTOOLCHAIN=local so that a go.mod
// asking for a newer Go cannot silently replace it with an upstream toolchain
// that lacks the fork's changes. Without a word about that pin, the resulting
// TooNewError ("running go 1.2.3; GOTOOLCHAIN=local") reads like a setting
// the user made and names neither the fork nor a way out. forkPinNote adds
// both, on the same line, and stays silent for upstream toolchains and for a
// GOTOOLCHAIN the user chose.

import (
	"cmd/go/internal/cfg"
	"fmt"
)

// forkPinNote returns the text TooNewError appends when the local
// toolchain is a suffixed build pinned by its own go.env, or "".
func forkPinNote(goVersion string) string {
	goVers, toolVers := local()
	if toolVers == "go"+goVers || Startup.GOTOOLCHAIN != "local" {
		return "" // an upstream release, or no pin
	}
	if _, changed := cfg.EnvOrAndChanged("GOTOOLCHAIN", ""); changed {
		return "" // the user's own GOTOOLCHAIN, not the fork's go.env
	}
	return fmt.Sprintf("; %s is a fork of go%s pinned by GOTOOLCHAIN=local in its go.env: "+
		"to build with the fork, lower the go line to %s or older; "+
		"to build with upstream go%s instead, without the fork, set GOTOOLCHAIN=auto",
		toolVers, goVers, goVers, goVersion)
}
