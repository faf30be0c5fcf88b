// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

import "internal/cpu"

// PrefetchwOK reports whether prefetchWrite uses PREFETCHW.
func PrefetchwOK() bool { return cpu.X86.HasPRFCHW }
