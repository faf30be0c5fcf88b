package lineageabi

import (
	"fmt"
	"strconv"
	"strings"
)

// BpftraceChain returns bpftrace statements that, in the context of a
// sampled thread, find its region from the thread pointer (reader B of the
// ABI: g at TP+tls_g_offset, then g.m, then m's region), copy the current
// record's fields and print them as L lines for ParseBpftrace. v must be the
// view of the live process: tls_g_offset and the capacities are run-time
// fields. tp is a bpftrace expression for the thread pointer; gReg one for
// the Go ABI's g register, used when the TLS slot is not published.
func (v *View) BpftraceChain(tp, gReg string) string {
	h := v.H
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, "\t"+format+"\n", args...) }
	if h.Flags&FlagTLSG != 0 {
		w("$g = *(uint64*)uptr((int64)%s + (%d));", tp, h.TLSGOffset)
	} else {
		w("$g = (uint64)%s;", gReg)
	}
	w("$m = $g != 0 ? *(uint64*)uptr($g + %d) : 0;", h.OffGM)
	w("$rg = $m != 0 ? *(uint64*)uptr($m + %d) : 0;", h.OffMRegion)
	w("$cur = $rg != 0 ? *(uint64*)uptr($rg + %d) : 0;", h.OffRegionCur)
	w("if ($cur != 0) {")
	w("\t$s1 = *(uint64*)uptr($cur + %d);", h.OffRecSeq)
	w("\tprintf(\"L R %%lx %%lu %%lu %%x %%x %%u %%u %%u %%lu %%u %x\\n\", $s1, *(uint64*)uptr($rg + %d), *(uint64*)uptr($cur + %d), *(uint32*)uptr($cur + %d), *(uint32*)uptr($cur + %d), *(uint16*)uptr($cur + %d), *(uint16*)uptr($cur + %d), *(uint16*)uptr($cur + %d), *(uint64*)uptr($cur + %d), *(uint32*)uptr($cur + %d));",
		h.TextBase, h.OffRegionTid, h.OffRecGoid, h.OffRecSite+h.OffAncStart, h.OffRecSite+h.OffAncGoPC, h.OffRecNanc, h.OffRecNstk, h.OffRecFlags, h.OffRecParentGoid, h.OffRecDepth)
	w("\t$n = *(uint16*)uptr($cur + %d);", h.OffRecNanc)
	w("\t$i = 0;")
	// Bounded by the capacity; unroll keeps the verifier's job trivial.
	w("\tunroll(%d) { if ($i < $n) { $a = $cur + %d + $i * %d; printf(\"L A %%x %%x\\n\", *(uint32*)uptr($a + %d), *(uint32*)uptr($a + %d)); } $i++; }",
		max(1, min(h.MaxDepth, 64)), h.OffRecAnc, h.AncSize, h.OffAncStart, h.OffAncGoPC)
	if h.MaxStack > 0 {
		w("\t$k = *(uint16*)uptr($cur + %d);", h.OffRecNstk)
		w("\t$i = 0;")
		w("\tunroll(%d) { if ($i < $k) { printf(\"L K %%lx\\n\", *(uint64*)uptr($cur + %d + $i * 8)); } $i++; }", min(h.MaxStack, 64), h.OffRecStack)
	}
	w("\tprintf(\"L E %%lx\\n\", *(uint64*)uptr($cur + %d));", h.OffRecSeq)
	w("}")
	return sb.String()
}

// ParseBpftrace decodes the L lines of one sample: "L R seq tid goid start
// gopc nanc nstk flags parent depth text_base", then nanc "L A start gopc",
// then "L K pc" stack entries, then "L E seq". Start and gopc are offsets
// from text_base (0: unknown), in hex. A sample whose two seq values differ or
// are odd is dropped (the record changed while it was copied), as are
// malformed lines; the thread id checks that the region is this thread's.
func ParseBpftrace(lines []string, tid int) (goid uint64, chain []Step, err error) {
	if len(lines) == 0 {
		return 0, nil, nil
	}
	var rec Record
	var seq1, seq2, rtid uint64
	h := &Header{}
	haveEnd := false
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "L" {
			return 0, nil, fmt.Errorf("malformed lineage line %q", l)
		}
		num := func(i, base int) uint64 {
			if i >= len(f) {
				err = fmt.Errorf("malformed lineage line %q", l)
				return 0
			}
			v, e := strconv.ParseUint(f[i], base, 64)
			if e != nil {
				err = fmt.Errorf("malformed lineage line %q", l)
			}
			return v
		}
		switch f[1] {
		case "R":
			seq1, rtid, rec.Goid, rec.StartPC, rec.GoPC = num(2, 16), num(3, 10), num(4, 10), num(5, 16), num(6, 16)
			rec.Nanc, rec.Nstk, rec.Flags, rec.ParentGoid = uint32(num(7, 10)), uint32(num(8, 10)), uint32(num(9, 10)), num(10, 10)
			rec.Depth, h.TextBase = uint32(num(11, 10)), num(12, 16)
			rec.StartPC, rec.GoPC = h.PC(uint32(rec.StartPC)), h.PC(uint32(rec.GoPC))
		case "A":
			a := Anc{StartPC: h.PC(uint32(num(2, 16))), GoPC: h.PC(uint32(num(3, 16)))}
			if len(rec.Anc) == 0 {
				a.Goid = rec.ParentGoid
			}
			rec.Anc = append(rec.Anc, a)
		case "K":
			rec.Stack = append(rec.Stack, num(2, 16))
		case "E":
			seq2, haveEnd = num(2, 16), true
		default:
			return 0, nil, fmt.Errorf("malformed lineage line %q", l)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if !haveEnd || seq1 != seq2 || seq1&1 != 0 {
		return 0, nil, ErrTorn
	}
	if rtid != uint64(tid) {
		return 0, nil, fmt.Errorf("region belongs to thread %d, sample to %d", rtid, tid)
	}
	if int(rec.Nanc) != len(rec.Anc) {
		return 0, nil, fmt.Errorf("lineage sample has %d of %d ancestors", len(rec.Anc), rec.Nanc)
	}
	return rec.Goid, Chain(&rec), nil
}
