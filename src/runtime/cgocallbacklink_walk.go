// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build amd64 || arm64

package runtime

// cgoLinkWalk runs cgocallback's walk over C's frame records
// (CGO_LINK_WALK in cgocallbacklink_GOARCH.h) from the record fp, as if
// cgocallback's SP were fp, g0's stack started at lo and asmcgocall had
// called C at hi. It returns the last record of the chain if the chain
// links to want, else 0. For TestCgoLinkWalk.
func cgoLinkWalk(fp, want, lo, hi uintptr) uintptr
