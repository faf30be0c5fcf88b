package main

import (
	"path/filepath"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/gobin/gobintest"
)

// TestBinaryCorruptPclntab is issue 16's item 4 end to end: a function table
// in which a function ends before its entry once made fpcheck binary panic.
// It must say one line and exit with the failure status.
func TestBinaryCorruptPclntab(t *testing.T) {
	exe := build(t, goTool(), "./testdata/progs/hello", "hello", nil)
	bad := filepath.Join(t.TempDir(), "corrupt")
	if err := gobintest.EndBeforeEntry(exe, bad); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := fpcheck(t, "binary", bad)
	want := "fpcheck: " + bad + ": " + gobintest.WantEndBeforeEntry
	if code != exitFailure || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("fpcheck binary on a corrupt pclntab: exit %d, stdout %q, stderr %q; want exit %d and one line starting %q",
			code, stdout, stderr, exitFailure, want)
	}
}
