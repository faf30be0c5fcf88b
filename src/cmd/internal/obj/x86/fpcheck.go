// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package x86

import (
	"cmd/internal/obj"
	"cmd/internal/sys"
)

// checkTopFrameFP applies obj.CheckTopFrameFP on amd64, where BP is the
// frame pointer.
func checkTopFrameFP(ctxt *obj.Link, s *obj.LSym) {
	if ctxt.Arch.Family == sys.AMD64 {
		obj.CheckTopFrameFP(ctxt, s, fpEffect)
	}
}

// fpEffect classifies p's effect on BP. Only full-width writes from a
// source other than BP's own value and the stack count as writes; any
// other instruction that changes BP is treated as deriving the new value
// from the old one.
func fpEffect(p *obj.Prog) obj.FPEffect {
	if p.To.Type != obj.TYPE_REG || p.To.Reg != REG_BP {
		return obj.FPKeep
	}
	switch p.As {
	case APOPQ:
		return obj.FPRestore
	case AXORL, AXORQ:
		if p.From.Type == obj.TYPE_REG && p.From.Reg == REG_BP {
			return obj.FPWrite // clearing idiom
		}
		return obj.FPKeep
	case AMOVQ, AMOVL, AMOVLQZX, ALEAQ, ALEAL:
	default:
		return obj.FPKeep
	}
	f := &p.From
	switch {
	case f.Type == obj.TYPE_REG && f.Reg == REG_BP:
		return obj.FPKeep
	case f.Type == obj.TYPE_MEM && (f.Name == obj.NAME_AUTO || f.Reg == REG_SP || f.Reg == REG_BP):
		return obj.FPRestore
	}
	return obj.FPWrite
}
