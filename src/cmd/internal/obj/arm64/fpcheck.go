// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package arm64

import "cmd/internal/obj"

// checkTopFrameFP applies obj.CheckTopFrameFP on arm64, where R29 is the
// frame pointer.
func checkTopFrameFP(ctxt *obj.Link, s *obj.LSym) {
	obj.CheckTopFrameFP(ctxt, s, fpEffect)
}

// fpEffect classifies p's effect on R29. Only full-width writes from a
// source other than R29's own value and the stack count as writes; any
// other instruction that changes R29 is treated as deriving the new value
// from the old one.
func fpEffect(p *obj.Prog) obj.FPEffect {
	t := &p.To
	switch {
	case t.Type == obj.TYPE_REG && t.Reg == REGFP:
	case t.Type == obj.TYPE_REGREG && (t.Reg == REGFP || t.Offset == REGFP):
	default:
		return obj.FPKeep
	}
	f := &p.From
	fromStack := f.Type == obj.TYPE_MEM && (f.Name == obj.NAME_AUTO || f.Reg == REGSP || f.Reg == REGFP)
	switch p.As {
	case AMOVD, AMOVW, AMOVWU, ALDP:
		switch {
		case fromStack:
			return obj.FPRestore
		case f.Type == obj.TYPE_REG && f.Reg == REGFP:
			return obj.FPKeep
		}
		return obj.FPWrite
	case AADD, ASUB:
		// ADD $off, RSP, R29 points R29 at a frame record of this function.
		if f.Type == obj.TYPE_CONST && p.Reg == REGSP {
			return obj.FPWrite
		}
	}
	return obj.FPKeep
}
