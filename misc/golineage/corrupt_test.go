package main

import (
	"path/filepath"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/gobin/gobintest"
)

// TestCorruptPclntab: golineage says the same one line as fpcheck binary
// (TestBinaryCorruptPclntab) for a function table in which a function ends
// before its entry.
func TestCorruptPclntab(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "corrupt")
	if err := gobintest.EndBeforeEntry(fixture(t, "blocked"), bad); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := tool(t, "symbolize", bad)
	want := "golineage: " + bad + ": " + gobintest.WantEndBeforeEntry
	if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("golineage symbolize on a corrupt pclntab: exit %d, stdout %q, stderr %q; want non-zero and one line starting %q",
			code, stdout, stderr, want)
	}
}
