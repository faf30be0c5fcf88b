// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build 386 || arm || mips || mipsle

package runtime

import "internal/runtime/atomic"

// lineageStoreSeq publishes a lineage sequence number. 32-bit ports have no
// StoreRel64; Store64 is sequentially consistent, so stronger than needed.
//
//go:nosplit
func lineageStoreSeq(seq *uint64, v uint64) { atomic.Store64(seq, v) }

// lineageSeqBegin makes a record's sequence odd before its fields change;
// lineageSeqEnd makes it even after. 32-bit ports have no plain 64-bit
// atomic store, so both are sequentially consistent atomics.
//
//go:nosplit
func lineageSeqBegin(seq *uint64, s uint64) { atomic.Store64(seq, s+1) }

//go:nosplit
func lineageSeqEnd(seq *uint64, v uint64) { atomic.Store64(seq, v) }
