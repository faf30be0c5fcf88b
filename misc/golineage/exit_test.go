package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/lineageraw"
)

// TestZombieTarget: a target that has exited but is not reaped yet is
// reported as such, not as a process without an executable.
func TestZombieTarget(t *testing.T) {
	cmd := exec.Command(fixture(t, "busy"), "-d", "1ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for procState(cmd.Process.Pid) != 'Z' {
		time.Sleep(10 * time.Millisecond)
	}
	for _, cmdName := range []string{"ps", "stacks"} {
		_, stderr, code := tool(t, cmdName, strconv.Itoa(cmd.Process.Pid))
		if code != 1 || !strings.Contains(stderr, "exited: it is a zombie") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s of a zombie: exit %d, stderr %q; want 1 and one line saying it is a zombie", cmdName, code, stderr)
		}
	}
}

// TestExitDuringRead: a target that exits while its goroutines are read
// (killed while the first stacks are walked) is reported in one line as a
// process that exited while it was read, not by the read that failed.
func TestExitDuringRead(t *testing.T) {
	exe := fixture(t, "parked")
	requireABI(t, exe)
	for _, args := range [][]string{{"ps"}, {"ps", "-json"}, {"stacks", "-all"}} {
		p := start(t, exe)
		lineageraw.TestHookWalk = func() {
			if p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				for !processGone(p.pid()) {
					time.Sleep(time.Millisecond)
				}
			}
		}
		_, stderr, code := tool(t, append(args, strconv.Itoa(p.pid()))...)
		lineageraw.TestHookWalk = nil
		want := fmt.Sprintf("process %d exited while it was read", p.pid())
		if code != 1 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v of a process killed during the read: exit %d, stderr %q; want 1 and %q", args, code, stderr, want)
		}
	}
}
