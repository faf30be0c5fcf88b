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

// lineageSeqBegin makes a record's sequence odd before its fields change, and
// lineageSeqEnd makes it even again after. An aligned 64-bit store is
// single-copy atomic here, so a plain store does. The field stores must stay
// between the two: on amd64 stores become visible in program order (TSO) and
// the compiler keeps stores in program order, so nothing more is needed and
// the go statement pays neither a locked instruction nor a call (which would
// also spill every live register); elsewhere publicationBarrier, a store
// barrier, orders them. Callers load from memory right after
// lineageSeqBegin, so dead-store elimination never sees the odd store
// overwritten by the even one.
//
//go:nosplit
func lineageSeqBegin(seq *uint64, s uint64) {
	*seq = s + 1
	if GOARCH != "amd64" {
		publicationBarrier()
	}
}

//go:nosplit
func lineageSeqEnd(seq *uint64, v uint64) {
	if GOARCH != "amd64" {
		publicationBarrier()
	}
	*seq = v
}
