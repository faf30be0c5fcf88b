// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build unix && !amd64 && !arm64

package runtime

func (c *sigctxt) sigfp() uintptr { return 0 } // not used: see asyncPreemptFPReady
