// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build !linux

package runtime_test

func lineageTid() uint64 { return 0 } // tests needing it skip off Linux
