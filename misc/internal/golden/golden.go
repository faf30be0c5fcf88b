// Package golden compares a test's output with a file under testdata/ and
// rewrites the file when the test binary runs with -update, as x/tools and
// pprof keep their golden files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run's output")

// Check compares got with testdata/NAME.golden, or writes got there under
// -update. A difference is reported at its first differing line.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(g) && line < len(w) && g[line] == w[line] {
		line++
	}
	at := func(l []string) string {
		if line < len(l) {
			return l[line]
		}
		return "(end of output)"
	}
	t.Errorf("%s differs from this run's output at line %d (go test -update rewrites it):\ngot:  %s\nwant: %s\n--- got\n%s", path, line+1, at(g), at(w), got)
}
