package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/golden"
)

// streams joins a command's exit code and output for a golden file.
func streams(code int, stdout, stderr string) string {
	return "exit " + string(rune('0'+code)) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr
}

// reproducible builds pkg with upstream so that the binary is the
// same on every machine: no cgo, no VCS stamp, no build paths.
func reproducible(t *testing.T, pkg, name, goarch string) string {
	return build(t, upstreamGo(t), pkg, name, []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + goarch}, "-trimpath", "-buildvcs=false")
}

func TestGoldenBinary(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		flags      []string
	}{
		{"binary-hello-amd64", "amd64", nil},
		{"binary-hello-amd64-v", "amd64", []string{"-v"}},
		{"binary-hello-amd64-json", "amd64", []string{"-json"}},
		{"binary-hello-arm64", "arm64", nil},
	} {
		bin := reproducible(t, "./testdata/progs/hello", "hello", tc.arch)
		code, stdout, stderr := fpcheck(t, append(append([]string{"binary"}, tc.flags...), bin)...)
		out := strings.ReplaceAll(streams(code, stdout, stderr), bin, "hello")
		golden.Check(t, tc.name, out)
	}
}

// TestGoldenPerf checks testdata/perf-spin.script, perf script output
// recorded from testdata/progs/spin built by upstream, with the
// binary's path replaced by SPIN, plus four chains edited by hand: one cut
// before goexit, two with an unknown address (as the leaf, and between Go
// frames), one with a leaf in libc.
func TestGoldenPerf(t *testing.T) {
	bin := reproducible(t, "./testdata/progs/spin", "spin", "amd64")
	data, err := os.ReadFile("testdata/perf-spin.script")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "perf.script")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(string(data), "(SPIN)", "("+bin+")")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := fpcheck(t, "perf", "-i", script)
	golden.Check(t, "perf-spin", streams(code, stdout, stderr))
	code, stdout, stderr = fpcheck(t, "perf", "-json", "-i", script)
	golden.Check(t, "perf-spin-json", streams(code, stdout, stderr))
}

func TestGoldenRun(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(fake, []byte(fakeScript), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GODEBUG", "")
	for _, mode := range []string{"clean", "mismatch", "crash", "inconsistent", "silent"} {
		t.Setenv("FPCHECK_FAKE", mode)
		code, stdout, stderr := fpcheck(t, "run", "--", fake)
		golden.Check(t, "run-"+mode, strings.ReplaceAll(streams(code, stdout, stderr), fake, "fake"))
	}
}

// TestGoldenAsm: the standalone driver's text and JSON diagnostics, and go
// vet -vettool's, for the stack-switch plant (found with any toolchain).
func TestGoldenAsm(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod": "module planted\n\ngo 1.27\n", "p.go": switchGo,
		"p_amd64.s": switchAMD64, "p_arm64.s": switchARM64,
	})
	env := []string{"GOARCH=amd64", "GOTOOLCHAIN=local", "GOFLAGS=",
		"PATH=" + filepath.Dir(goTool()) + string(os.PathListSeparator) + os.Getenv("PATH")}
	clean := func(s string) string { return strings.ReplaceAll(s, dir, "$DIR") }
	code, stdout, stderr := fpcheckIn(t, dir, env, "./...")
	golden.Check(t, "asm-text", clean(streams(code, stdout, stderr)))
	code, stdout, stderr = fpcheckIn(t, dir, env, "-json", "./...")
	golden.Check(t, "asm-json", clean(streams(code, stdout, stderr)))
	out, err := goVet(t, goTool(), dir, env)
	if err == nil {
		t.Errorf("go vet -vettool passed the stack-switch plant:\n%s", out)
	}
	golden.Check(t, "asm-vet", clean(string(out)))
}
