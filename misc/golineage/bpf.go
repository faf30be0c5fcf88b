package main

// The bpf collector is the kernel-side model: a bpftrace program on a perf
// sampling event copies, per sample and without stopping the thread from
// user space, the registers, the top words of the stack, the frame-pointer
// chain (walked by the program itself, up to walkFrames return addresses) and the
// thread's lineage chain (read from the thread pointer through the lineage
// ABI's documented offsets). This side parses that text, repairs the
// innermost frame as the ptrace unwinder does, and stitches.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// stackWords is how many words above SP the program copies for the
// innermost-frame repair.
const stackWords = 8

// walkFrames bounds the in-kernel frame-pointer walk (a multiple of 8), as
// perf_event_max_stack bounds the kernel's own.
const walkFrames = 128

// bpfScript returns the bpftrace program.
func bpfScript(pid int, pf profileFlags, view *lineageabi.View) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "profile:hz:%d /pid == %d/ {\n", pf.hz, pid)
	// The user registers, also when the sample hit in the kernel: the entry
	// code saved them at the top of the task's kernel stack (task_pt_regs).
	sb.WriteString("\t$u = (struct pt_regs *)((uint64)curtask->stack + 16384 - sizeof(struct pt_regs));\n")
	sb.WriteString("\t$sp = $u->sp;\n")
	sb.WriteString("\tprintf(\"S %d %lx %lx %lx %lx\\n\", tid, curtask->thread.fsbase, $u->ip, $sp, $u->bp);\n")
	sb.WriteString("\tprintf(\"W")
	for i := 0; i < stackWords; i++ {
		sb.WriteString(" %lx")
	}
	sb.WriteString("\\n\"")
	for i := 0; i < stackWords; i++ {
		fmt.Fprintf(&sb, ", *(uint64*)uptr($sp+%d)", 8*i)
	}
	sb.WriteString(");\n")
	if view != nil {
		sb.WriteString(view.BpftraceChain("curtask->thread.fsbase", "$u->r14"))
	}
	// The frame-pointer walk, in the program itself: bpftrace's ustack()
	// symbolizes every frame in user space, which costs far more than
	// reading raw return addresses (doc/benchmarks.md, "golineage sampling
	// overhead").
	sb.WriteString("\t$fp = $u->bp;\n")
	for line := 0; line < walkFrames/8; line++ {
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&sb, "\t$a%d = (uint64)0; if ($fp != 0) { $a%d = *(uint64*)uptr($fp+8); $fp = *(uint64*)uptr($fp); }\n", i, i)
		}
		sb.WriteString("\tif ($a0 != 0) { printf(\"F %lx %lx %lx %lx %lx %lx %lx %lx\\n\", $a0, $a1, $a2, $a3, $a4, $a5, $a6, $a7); }\n")
	}
	sb.WriteString("\tprintf(\"E\\n\");\n}\n")
	fmt.Fprintf(&sb, "interval:ms:%d { exit(); }\n", pf.duration.Milliseconds())
	// Tells the reader the probes are attached (after bpftrace's compile).
	sb.WriteString("BEGIN { printf(\"READY\\n\"); }\n")
	return sb.String()
}

var bpfOnce struct {
	sync.Once
	err error
}

// bpfAvailable reports whether bpftrace can load programs here (for tests;
// the result is cached).
func bpfAvailable() error {
	bpfOnce.Do(func() { bpfOnce.err = probeBPF() })
	return bpfOnce.err
}

func probeBPF() error {
	path, err := exec.LookPath("bpftrace")
	if err != nil {
		return errors.New("bpftrace is not installed (Debian: apt-get install bpftrace)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-e", `BEGIN { printf("ok\n"); exit(); }`).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("ok")) {
		return fmt.Errorf("bpftrace cannot load programs (needs root or CAP_BPF+CAP_PERFMON): %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func sampleBPF(t *profTarget, pf profileFlags, b *pprofout.Builder) error {
	pid, bin, bias, abi := t.pid, t.bin, t.bias, t.abi
	if bin.Arch != "amd64" {
		return fmt.Errorf("the bpf collector supports amd64 only (executable is %s)", bin.Arch)
	}
	if _, err := exec.LookPath("bpftrace"); err != nil {
		return errors.New("the bpf collector needs bpftrace, which is not installed (Debian: apt-get install bpftrace)")
	}
	var view *lineageabi.View
	if abi != nil {
		// The program embeds run-time header fields; read them without
		// stopping the process (they are written once, before any goroutine).
		v, err := abi.Load(t.p, bias)
		if err != nil {
			return err
		}
		view = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), pf.duration+60*time.Second)
	defer cancel()
	// -B none: lines arrive as the probes print them, so READY says when
	// sampling really started.
	cmd := exec.CommandContext(ctx, "bpftrace", "-B", "none", "-e", bpfScript(pid, pf, view))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// bpftrace runs to the end of its interval whatever happens to the
	// target; end it early (SIGINT: it prints what it has and exits) when
	// we are interrupted or the target exits.
	var gone atomic.Bool
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if pf.ctx.Err() != nil {
				cmd.Process.Signal(os.Interrupt)
				return
			}
			if processGone(pid) {
				gone.Store(true)
				cmd.Process.Signal(os.Interrupt)
				return
			}
		}
	}()
	perr := parseBPF(stdout, bin, bias, view != nil, b, func() {
		if pf.stats {
			fmt.Fprintln(pf.stderr, "golineage: sampling started")
		}
	})
	werr := cmd.Wait()
	close(done)
	switch {
	case perr != nil:
		return perr
	case gone.Load():
		return fmt.Errorf("process %d exited", pid)
	case werr != nil && pf.ctx.Err() == nil:
		return fmt.Errorf("bpftrace: %v: %s (loading BPF programs needs root or CAP_BPF and CAP_PERFMON)", werr, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// parseBPF reads the program's output: per sample an S line (tid, thread
// pointer, ip, sp, bp), a W line (stack words), optional L lines (lineage
// records, see lineageabi.ParseBpftrace), F lines of return addresses from
// the frame-pointer walk (8 per line, 0 past the end) and an E line.
//
// A READY line says the probes are attached; ready (if not nil) is called.
func parseBPF(r io.Reader, bin *gobin.Binary, bias uint64, withLineage bool, b *pprofout.Builder, ready func()) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur *bpfSample
	flush := func() {
		if cur != nil {
			b.Add(cur.sample(bin, bias, withLineage))
			cur = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "READY":
			if ready != nil {
				ready()
			}
		case strings.HasPrefix(line, "S "):
			flush()
			f := strings.Fields(line)
			if len(f) != 6 {
				return fmt.Errorf("bpftrace: malformed sample line %q", line)
			}
			cur = &bpfSample{}
			cur.tid, _ = strconv.Atoi(f[1])
			for i, p := range []*uint64{&cur.regs.TLS, &cur.regs.PC, &cur.regs.SP, &cur.regs.FP} {
				*p, _ = strconv.ParseUint(f[2+i], 16, 64)
			}
		case strings.HasPrefix(line, "W ") && cur != nil:
			for _, w := range strings.Fields(line)[1:] {
				v, _ := strconv.ParseUint(w, 16, 64)
				cur.words = append(cur.words, v)
			}
		case strings.HasPrefix(line, "L ") && cur != nil:
			cur.lineage = append(cur.lineage, line)
		case strings.HasPrefix(line, "F ") && cur != nil:
			if len(cur.ustack) == 0 {
				cur.ustack = append(cur.ustack, cur.regs.PC)
			}
			for _, w := range strings.Fields(line)[1:] {
				if v, _ := strconv.ParseUint(w, 16, 64); v != 0 {
					cur.ustack = append(cur.ustack, v)
				}
			}
		case line == "E" && cur != nil:
			if len(cur.ustack) == 0 {
				cur.ustack = append(cur.ustack, cur.regs.PC)
			}
			flush()
		}
	}
	flush()
	return sc.Err()
}

type bpfSample struct {
	tid     int
	regs    target.Regs
	words   []uint64
	ustack  []uint64
	lineage []string
}

// sample repairs the innermost frame (stack.RepairKernelWalk) and stitches.
func (s *bpfSample) sample(bin *gobin.Binary, bias uint64, withLineage bool) pprofout.Sample {
	out := pprofout.Sample{TID: s.tid, PCs: stack.RepairKernelWalk(bin, bias, s.regs, s.words, s.ustack)}
	s.stitch(&out, withLineage)
	return out
}

// stitch attaches the lineage copied in the kernel; a torn or malformed
// copy leaves the sample without lineage (counted in lineageDropped).
func (s *bpfSample) stitch(out *pprofout.Sample, withLineage bool) {
	if !withLineage {
		return
	}
	goid, chain, err := lineageabi.ParseBpftrace(s.lineage, s.tid)
	if err != nil {
		lineageDropped++
		return
	}
	out.Goid, out.Lineage = goid, chain
}

var lineageDropped int
