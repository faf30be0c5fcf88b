package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/target"
)

// TestProfileStackSwitch: a program that loops in functions that switch to
// the system stack (time.Now, runtime.Gosched through mcall, runtime.Stack
// through systemstack) is sampled with every frame named, by every
// collector: the vDSO's (time.Now's clock_gettime) by the function or
// [vdso], not "??"; and no bogus caller is read from the system stack in
// a function that switched to it (the ebpf collector's leaf repair once
// took the word at the new SP for the return address).
func TestProfileStackSwitch(t *testing.T) {
	exe := fixture(t, "stackswitch")
	requireABI(t, exe)
	p := start(t, exe)
	pid := p.pid()
	v, err := target.ReadVDSO(pid, target.ProcMem(pid))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	unknown := regexp.MustCompile(`\?\? pc=(0x[0-9a-f]+)`)
	for _, collector := range []string{"ptrace", "ebpf"} {
		t.Run(collector, func(t *testing.T) {
			if collector == "ebpf" {
				requireEBPF(t)
			}
			folded, stderr, code := tool(t, "profile", "-collector", collector, "-hz", "499", "-duration", "1s", "-format", "folded", strconv.Itoa(pid))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			named, inVDSO, bogus := 0, 0, 0
			loops := map[string]bool{}
			for _, l := range strings.Split(folded, "\n") {
				if strings.Contains(l, "clock_gettime") || strings.Contains(l, "[vdso]") {
					named++
				}
				for _, loop := range []string{"main.nowLoop", "main.goschedLoop", "main.stackLoop"} {
					loops[loop] = loops[loop] || strings.Contains(l, loop)
				}
				for _, m := range unknown.FindAllStringSubmatch(l, -1) {
					if pc, err := strconv.ParseUint(m[1], 0, 64); err == nil && v.Contains(pc) {
						inVDSO++
					} else {
						bogus++
					}
				}
			}
			// The Gosched loop yields its CPU to the other two at once:
			// it is rarely on a CPU when a sample is taken, so it is
			// not required; no sample may have an unnamed frame.
			if named == 0 || inVDSO > 0 || bogus > 0 || !loops["main.nowLoop"] || !loops["main.stackLoop"] {
				t.Errorf("%d samples name a vDSO frame, %d leave one unnamed, %d have another unnamed frame, loops sampled %v; want some, none, none, and the time.Now and runtime.Stack loops:\n%s", named, inVDSO, bogus, loops, folded)
			}
		})
	}
	p.checkRunning(t)
}
