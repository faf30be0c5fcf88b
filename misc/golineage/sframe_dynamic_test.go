package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"fpsafe.dev/misc/golineage/internal/target"
	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/sframe"
)

// TestSFrameDynamic is the dynamic check of the linker's SFrame table: it
// stops every thread of a running program many times, unwinds each with
// the table alone (sframe.Unwind, reading the stopped program's memory),
// and checks the chain against the frame-pointer chain the fork makes
// exact. Where the thread is in a frame record (fpchain.InFrameRecord) the
// two must be equal, frame for frame; where it is not (a frameless leaf,
// a prologue or an epilogue), the SFrame chain must be the frame-pointer
// chain with the callers the frame-pointer walk skips put back, and those
// recovered callers are counted. Every SFrame chain must end at an
// outermost or signal frame. It skips unless the fixture's toolchain
// (GOLINEAGE_FIXTURE_GO) emits a PT_GNU_SFRAME segment.
func TestSFrameDynamic(t *testing.T) {
	exe := fixture(t, "busy")
	b, err := gobin.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sd, err := b.SFrame()
	if err != nil {
		t.Skipf("skipping: %v; set GOLINEAGE_FIXTURE_GO to a toolchain that emits SFrame", err)
	}
	sec, err := sframe.Decode(sd.Data, sd.Addr)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, exe)
	tr := target.NewTracer()
	defer tr.Close()

	var c sframeCounts
	deadline := time.Now().Add(3 * time.Second)
	for stops := 0; stops < 200 && time.Now().Before(deadline); stops++ {
		_, err := tr.Stop(p.pid(), false, func(s *target.Stopped) {
			for _, th := range s.Threads {
				c.thread(t, b, sec, s.Mem, th)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		c.stops++
		time.Sleep(time.Millisecond)
	}
	p.checkRunning(t)
	t.Logf("SFrame dynamic check: %d stops, %d thread stacks, %d frames; %d equal to the frame-pointer chain, %d with callers the frame-pointer walk misses (%d frames; %d stacks stopped in a frameless leaf); %d outside the table (PC in no FDE)",
		c.stops, c.stacks, c.frames, c.equal, c.recovered, c.missed, c.leaf, c.outside)
	if c.bad > 0 {
		t.Errorf("%d SFrame chains disagree with the frame-pointer chain or end early (first above)", c.bad)
	}
	if c.stacks == 0 {
		t.Fatal("no thread stack was unwound")
	}
}

type sframeCounts struct {
	stops, stacks, frames, equal, recovered, missed, leaf, outside, bad int
}

func (c *sframeCounts) thread(t *testing.T, b *gobin.Binary, sec *sframe.Section, mem target.Mem, th target.Thread) {
	read := func(addr uint64) (uint64, error) {
		var w [8]byte
		if err := mem.ReadAt(w[:], addr); err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint64(w[:]), nil
	}
	regs := sframe.Regs{PC: th.Regs.PC, SP: th.Regs.SP, FP: th.Regs.FP, LR: th.Regs.LR}
	f := b.FindFunc(regs.PC)
	if f == nil {
		c.outside++ // the vDSO, or C code
		return
	}
	sf, err := sec.Unwind(regs, read, 200)
	if errors.Is(err, sframe.ErrNoFDE) {
		c.outside++
		return
	}
	c.stacks++
	c.frames += len(sf)
	last := b.FindFunc(sf[len(sf)-1] - 1)
	if err != nil || last == nil || !fpchain.IsRoot(last.Name) && !slices.Contains(fpchain.SignalFrames, last.Name) {
		c.report(t, b, "SFrame chain ends early", sf, nil, err)
		return
	}
	fp := []uint64{regs.PC}
	for frame := regs.FP; frame != 0 && len(fp) < 200; {
		ra, err1 := read(frame + 8)
		next, err2 := read(frame)
		if err1 != nil || err2 != nil || ra == 0 {
			break
		}
		fp = append(fp, ra)
		frame = next
	}
	code, _ := b.Code(f)
	inRecord := fpchain.InFrameRecord(fpchain.Frame{Arch: b.Arch, PC: regs.PC, Entry: f.Entry, Code: code})
	switch {
	case slices.Equal(sf, fp):
		c.equal++
	case !inRecord && len(sf) > len(fp) && sf[0] == fp[0] && slices.Equal(sf[len(sf)-len(fp)+1:], fp[1:]):
		// The frame-pointer walk skips the innermost frame's caller, and
		// more when that caller is itself frameless (a call the signal
		// handler injected into a leaf: asyncPreempt).
		c.recovered++
		c.missed += len(sf) - len(fp)
		if f.SPDelta(regs.PC) == 0 || f.SPDelta(regs.PC) == -1 {
			c.leaf++
		}
	default:
		c.report(t, b, fmt.Sprintf("chains differ (in frame record: %v)", inRecord), sf, fp, err)
	}
}

func (c *sframeCounts) report(t *testing.T, b *gobin.Binary, what string, sf, fp []uint64, err error) {
	c.bad++
	if c.bad > 3 {
		return
	}
	name := func(pcs []uint64) []string {
		var out []string
		for i, pc := range pcs {
			lookup := pc
			if i > 0 {
				lookup--
			}
			if f := b.FindFunc(lookup); f != nil {
				out = append(out, fmt.Sprintf("%s+%#x", f.Name, pc-f.Entry))
			} else {
				out = append(out, fmt.Sprintf("%#x", pc))
			}
		}
		return out
	}
	t.Errorf("%s (error %v):\nSFrame: %v\nFP:     %v", what, err, name(sf), name(fp))
}
