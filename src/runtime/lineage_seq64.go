// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x || wasm

package runtime

import "internal/runtime/atomic"

// lineageStoreSeq publishes a lineage sequence number with release order.
//
//go:nosplit
func lineageStoreSeq(seq *uint64, v uint64) { atomic.StoreRel64(seq, v) }
