package workload

import (
	"go/parser"
	"go/token"
	"runtime"
	"strings"
	"testing"
)

func TestAtDepth(t *testing.T) {
	for _, depth := range []int{8, 22, 32, 128} {
		got := 0
		AtDepth(depth, func() { got = Depth() })
		if got != depth {
			t.Errorf("AtDepth(%d): f sees %d frames", depth, got)
		}
		// The stack the profilers see: count it the way they do.
		AtDepth(depth, func() {
			pcs := make([]uintptr, 256)
			if n := runtime.Callers(1, pcs); n != depth {
				t.Errorf("AtDepth(%d): runtime.Callers(1) = %d frames", depth, n)
			}
		})
	}
}

func TestAtDepthTooShallow(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AtDepth(1) did not panic")
		}
	}()
	AtDepth(1, func() {})
}

func TestGoSourceParses(t *testing.T) {
	src := GoSource(50, 7)
	if _, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0); err != nil {
		t.Fatal(err)
	}
	if string(GoSource(50, 7)) != string(src) {
		t.Error("GoSource is not deterministic")
	}
}

func TestWorkloadsRun(t *testing.T) {
	g := NewGarbage(4)
	for range 5 {
		g.Step()
	}
	j := NewJSON(2000)
	if j.Size() < 100_000 {
		t.Errorf("JSON document is only %d bytes", j.Size())
	}
	j.Step()
}

func TestCleanEnvDropsRuntimeSettings(t *testing.T) {
	t.Setenv("GODEBUG", "tracebackancestors=8")
	t.Setenv("GOGC", "off")
	env := CleanEnv()
	for _, e := range env {
		if strings.HasPrefix(e, "GODEBUG=") || strings.HasPrefix(e, "GOGC=") {
			t.Errorf("CleanEnv kept %q", e)
		}
	}
	if env[len(env)-1] != "GOTOOLCHAIN=local" {
		t.Errorf("CleanEnv does not end with GOTOOLCHAIN=local: %q", env[len(env)-1])
	}
}
