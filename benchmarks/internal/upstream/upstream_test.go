package upstream

import (
	"os"
	"strings"
	"testing"
)

func TestRelease(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"go1.27.3-fpsafe1", "go1.27.3"},
		{"go1.30-x1", "go1.30"},
		{"go1.27.3", ""},
		{"devel go1.28-abcdef", ""},
		{"go1.27.3-", ""},
	} {
		got, err := Release(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("Release(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestVERSION: the repository's VERSION is a fork version, and its
// release is what the tools compare against.
func TestVERSION(t *testing.T) {
	v, err := os.ReadFile("../../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(v), "\n")
	if _, err := Release(first); err != nil {
		t.Fatal(err)
	}
}
