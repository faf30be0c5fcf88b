package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/lineageabi"
)

// TestGoroutineCommandsBadInput: the goroutine commands (and a wall-clock
// profile, which reads every goroutine too) on a target that publishes no
// registry (GODEBUG=lineage=0) or no lineage ABI at all (the header's
// cookie erased, as in a binary of another toolchain) exit non-zero with
// one line naming the cause, and leave the target running.
func TestGoroutineCommandsBadInput(t *testing.T) {
	exe := fixture(t, "blocked")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	noabi := filepath.Join(t.TempDir(), "noabi")
	if err := os.WriteFile(noabi, bytes.ReplaceAll(data, lineageabi.Magic, make([]byte, len(lineageabi.Magic))), 0o755); err != nil {
		t.Fatal(err)
	}
	// A version 1 header: the same bytes but for the version (the runtime
	// does not read it).
	v2 := append(slices.Clip(lineageabi.Magic), lineageabi.Version, 0, 0, 0)
	v1 := append(slices.Clip(lineageabi.Magic), 1, 0, 0, 0)
	if !bytes.Contains(data, v2) {
		t.Fatalf("%s has no version %d header", exe, lineageabi.Version)
	}
	oldabi := filepath.Join(t.TempDir(), "v1")
	if err := os.WriteFile(oldabi, bytes.ReplaceAll(data, v2, v1), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, exe string
		env       []string
		want      string
	}{
		{"lineage=0", exe, []string{"GODEBUG=lineage=0"}, "publishes no goroutine registry"},
		{"no ABI", noabi, nil, "does not publish the goroutine lineage ABI"},
		{"version 1", oldabi, nil, "lineage ABI version 1: this reader reads version 2; rebuild the target with this fork's toolchain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, tc.exe, tc.env...)
			prof := filepath.Join(t.TempDir(), "wall.pb.gz")
			for _, cmd := range [][]string{{"ps"}, {"ps", "-json", "-stacks"}, {"tree"}, {"waits"}, {"profile", "-wall", "-duration", "300ms", "-o", prof}} {
				out, stderr, code := tool(t, append(cmd, strconv.Itoa(p.pid()))...)
				if code != 1 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || out != "" {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", cmd, code, out, stderr, tc.want)
				}
			}
			p.checkRunning(t)
		})
	}
}
